// The Java consumer of test/real/nacos-consumer (the real nacos-client 2.3.2: it subscribes over
// gRPC and gets changes pushed on that stream) as a child process: one JSON line per request and
// per change of its instance list.
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createInterface } from 'node:readline'

const projectDir = fileURLToPath(new URL('../nacos-consumer/', import.meta.url))
const jarPath = join(projectDir, 'target', 'nacos-consumer.jar')

export function buildNacosConsumer (): void {
  const sources = ['pom.xml', 'src/main/java/dev/lameduck/realnacos/NacosConsumer.java'].map((f) => statSync(join(projectDir, f)).mtimeMs)
  if (existsSync(jarPath) && statSync(jarPath).mtimeMs >= Math.max(...sources)) return
  const build = spawnSync('mvn', ['-B', '-q', 'package', '-DskipTests'], { cwd: projectDir, encoding: 'utf8' })
  if (build.status !== 0) throw new Error(`building ${projectDir} failed (mvn exit ${build.status}):\n${build.stdout}${build.stderr}`)
}

export interface ConsumerRequest { t: number, port: number, status: number }
export interface ConsumerHosts { t: number, ports: number[] }

export interface JavaConsumer {
  requests: ConsumerRequest[]
  hosts: ConsumerHosts[]
  /** The consumer's current list (its last `hosts` line). */
  ports: () => number[]
  /** The last lines of stderr, for failure messages. */
  tail: () => string
  close: () => Promise<void>
}

/** `pick: 'weighted'`: the client's own pick by Nacos weight (selectOneHealthyInstance) instead of round robin. */
export async function startJavaConsumer (serverList: string, service: string, options: { pauseMs?: number, pick?: 'roundrobin' | 'weighted' } = {}): Promise<JavaConsumer> {
  buildNacosConsumer()
  // The client keeps its logs and failover cache under user.home: give it a private one.
  const home = mkdtempSync(join(tmpdir(), 'lameduck-nacos-consumer-'))
  const classpath = `${jarPath}:${join(projectDir, 'target', 'lib', '*')}`
  const child = spawn('java', ['-Xmx128m', '-XX:TieredStopAtLevel=1', `-Duser.home=${home}`, '-cp', classpath, 'dev.lameduck.realnacos.NacosConsumer', serverList, service, String(options.pauseMs ?? 2), options.pick ?? 'roundrobin'],
    { detached: true, stdio: ['pipe', 'pipe', 'pipe'] })
  const requests: ConsumerRequest[] = []
  const hosts: ConsumerHosts[] = []
  let stderr = ''
  child.stderr!.on('data', (chunk: Buffer) => { stderr = (stderr + chunk.toString('utf8')).slice(-4000) })
  const ready = new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (!line.startsWith('{')) return
      const event = JSON.parse(line) as { event: string } & ConsumerRequest & ConsumerHosts
      if (event.event === 'ready') resolve()
      else if (event.event === 'request') requests.push({ t: event.t, port: event.port, status: event.status })
      else if (event.event === 'hosts') hosts.push({ t: event.t, ports: event.ports })
    })
    child.once('exit', (code) => reject(new Error(`the Java consumer exited (${code}):\n${stderr}`)))
  })
  await ready
  return {
    requests,
    hosts,
    ports: () => hosts.at(-1)?.ports ?? [],
    tail: () => stderr,
    async close () {
      const exited = new Promise<void>((resolve) => { if (child.exitCode !== null || child.signalCode !== null) resolve(); else child.once('exit', () => resolve()) })
      child.stdin!.end()
      const timer = setTimeout(() => { try { process.kill(-child.pid!, 'SIGKILL') } catch {} }, 5_000)
      await exited
      clearTimeout(timer)
      rmSync(home, { recursive: true, force: true })
    }
  }
}
