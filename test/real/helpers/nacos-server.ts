// The real Nacos naming server (test/real/nacos-server, Nacos 0.8.0: the newest
// server modules Maven Central serves) as a child process: built once with
// Maven, started on a port the child picks itself (server.port=0, read back from
// its "Tomcat started on port(s)" line), stopped by signalling its process group.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const projectDir = fileURLToPath(new URL('../nacos-server/', import.meta.url))
const jarPath = join(projectDir, 'target', 'nacos-server.jar')

/** Why the real tests cannot run here, or undefined when Java and Maven are on the PATH. */
export function missingTools (): string | undefined {
  for (const [tool, args] of [['java', ['-version']], ['mvn', ['-v']]] as const) {
    const probe = spawnSync(tool, args, { stdio: 'ignore' })
    if (probe.error !== undefined || probe.status !== 0) return `${tool} is not on the PATH: the real-server tests need Java 17 and Maven (set LAMEDUCK_REAL=skip to skip them)`
  }
  return undefined
}

/** `{ skip }` for node:test when LAMEDUCK_REAL=skip; throws a clear error when Java or Maven is missing. */
export function realTestOptions (): { skip?: string } {
  if (process.env.LAMEDUCK_REAL === 'skip') return { skip: 'LAMEDUCK_REAL=skip' }
  const missing = missingTools()
  if (missing !== undefined) throw new Error(missing)
  return {}
}

function newestSource (): number {
  return Math.max(...['pom.xml', 'src/main/java/dev/lameduck/realnacos/NacosServer.java', 'src/main/resources/application.properties']
    .map((f) => statSync(join(projectDir, f)).mtimeMs))
}

/** Builds target/nacos-server.jar unless it is newer than the project's sources. Returns the jar. */
export function buildNacosServer (): string {
  if (existsSync(jarPath) && statSync(jarPath).mtimeMs >= newestSource()) return jarPath
  const build = spawnSync('mvn', ['-B', '-q', 'package', '-DskipTests'], { cwd: projectDir, encoding: 'utf8' })
  if (build.status !== 0) throw new Error(`building ${projectDir} failed (mvn exit ${build.status}):\n${build.stdout}${build.stderr}`)
  return jarPath
}

export interface RealNacos {
  /** host:port, as the nacos SDK's serverList takes it. */
  serverList: string
  port: number
  pid: number
  /** GET/POST/PUT/DELETE on /nacos/v1/ns + path with query params; returns status and text. */
  call: (method: string, path: string, params?: Record<string, string | number | boolean>) => Promise<{ status: number, text: string }>
  /** The server's runtime switches (0.8.0's /api/updateSwitch), e.g. defaultCacheMillis. */
  updateSwitch: (entry: string, params: Record<string, string | number>) => Promise<void>
  close: () => Promise<void>
}

const STARTED = /Tomcat started on port\(s\): (\d+)/

/** Starts the server in standalone mode in a fresh nacos.home; resolves once it answers HTTP. */
export async function startRealNacos (timeoutMs = 120_000): Promise<RealNacos> {
  const jar = buildNacosServer()
  const home = mkdtempSync(join(tmpdir(), 'lameduck-nacos-'))
  const child = spawn('java', ['-Xms64m', '-Xmx256m', '-XX:TieredStopAtLevel=1', '-Dnacos.standalone=true', `-Dnacos.home=${home}`,
    '-Dserver.address=127.0.0.1', '-Dserver.port=0', '-jar', jar], { cwd: home, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
  let log = ''
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => { stopGroup(child); reject(new Error(`the Nacos server did not start in ${timeoutMs} ms:\n${log.slice(-4000)}`)) }, timeoutMs)
    const onData = (chunk: Buffer): void => {
      log += chunk.toString('utf8')
      const match = STARTED.exec(log)
      if (match !== null) { clearTimeout(timer); resolve(Number(match[1])) }
    }
    child.stdout!.on('data', onData)
    child.stderr!.on('data', onData)
    child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`the Nacos server exited (${code}) before it listened:\n${log.slice(-4000)}`)) })
  })
  child.stdout!.resume()
  child.stderr!.resume()
  const base = `http://127.0.0.1:${port}/nacos/v1/ns`
  const call = async (method: string, path: string, params: Record<string, string | number | boolean> = {}): Promise<{ status: number, text: string }> => {
    const query = new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, String(v)]))
    const res = await fetch(`${base}${path}?${query}`, { method })
    return { status: res.status, text: await res.text() }
  }
  // Tomcat listens before the naming module has loaded its switches: wait for an answer from it.
  const deadline = Date.now() + timeoutMs
  while ((await call('GET', '/api/hello').catch(() => ({ status: 0, text: '' }))).status !== 200) {
    if (Date.now() > deadline) { stopGroup(child); throw new Error(`the Nacos server on ${port} never answered /api/hello`) }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return {
    serverList: `127.0.0.1:${port}`,
    port,
    pid: child.pid!,
    call,
    async updateSwitch (entry, params) {
      const answer = await call('GET', '/api/updateSwitch', { entry, ...params })
      if (answer.text !== 'ok') throw new Error(`updateSwitch ${entry} failed: ${answer.status} ${answer.text}`)
    },
    async close () {
      const exited = new Promise<void>((resolve) => { if (child.exitCode !== null || child.signalCode !== null) resolve(); else child.once('exit', () => resolve()) })
      stopGroup(child)
      const timer = setTimeout(() => stopGroup(child, 'SIGKILL'), 10_000)
      await exited
      clearTimeout(timer)
      rmSync(home, { recursive: true, force: true })
    }
  }
}

function stopGroup (child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): void {
  try { process.kill(-child.pid!, signal) } catch { /* already gone */ }
}
