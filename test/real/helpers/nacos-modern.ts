// The real Nacos 2.3.1 and 3.1.0 servers (test/real/nacos2-server, nacos3-server: third-party
// republications of the Apache-2.0 Nacos code, see test/real/README.md) as child processes:
// standalone, embedded Derby, nacos.home in a fresh temporary directory, in their own process
// group, stopped by its id. Nacos derives its gRPC ports (+1000, +1001) and the JRaft port
// (-1000) from the configured HTTP port before Tomcat binds, so port 0 cannot work: the helper
// picks a port whose three neighbours are free too, and retries once when a bind still races.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { jarPath } from './jvm.ts'

export type NacosVersion = '2.3.1' | '3.1.0'

const MODULE: Record<NacosVersion, string> = { '2.3.1': 'nacos2-server', '3.1.0': 'nacos3-server' }
/** The line each version logs once its HTTP API serves (3.x: after the server web context). */
const STARTED: Record<NacosVersion, RegExp> = { '2.3.1': /Nacos started successfully/, '3.1.0': /Nacos Server API started successfully/ }
const JVM_FLAGS = ['-Xms64m', '-Xmx320m', '-Xss512k', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-Xshare:auto']

export interface ModernNacos {
  version: NacosVersion
  /** host:port, as the nacos SDK's serverList and the Java client's serverAddr take it. */
  serverList: string
  port: number
  pid: number
  /** Any HTTP call under /nacos (path like '/v1/ns/instance'), params in the query string. */
  call: (method: string, path: string, params?: Record<string, string | number | boolean>) => Promise<{ status: number, text: string }>
  /** Log lines so far (stdout and stderr), for failure messages. */
  tail: (n?: number) => string
  close: () => Promise<void>
}

export interface ModernNacosOptions {
  /** Extra server properties (-Dkey=value), e.g. nacos.naming.push.pushTaskDelay. */
  properties?: Record<string, string | number | boolean>
  startTimeoutMs?: number
}

const running = new Set<ChildProcess>()
process.once('exit', () => { for (const c of running) killGroup(c, 'SIGKILL') })

function killGroup (child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return
  try { process.kill(-child.pid, signal) } catch { /* already gone */ }
}

async function free (port: number, host: string): Promise<boolean> {
  return await new Promise((resolve) => {
    const s = createServer()
    s.once('error', () => resolve(false))
    s.listen(port, host, () => s.close(() => resolve(true)))
  })
}

/** A port P from the OS with P-1000, P+1000 and P+1001 free as well (gRPC binds every address). */
async function portQuad (): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const s = createServer()
    await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))
    const port = (s.address() as { port: number }).port
    await new Promise((resolve) => s.close(resolve))
    if (port - 1000 < 1024 || port + 1001 > 65_535) continue
    const others = await Promise.all([port - 1000, port + 1000, port + 1001].map((p) => free(p, '0.0.0.0')))
    if (others.every(Boolean)) return port
  }
  throw new Error('no free port with free neighbours (-1000, +1000, +1001) for Nacos')
}

export async function startModernNacos (version: NacosVersion, options: ModernNacosOptions = {}): Promise<ModernNacos> {
  try {
    return await startOnce(version, options)
  } catch (err) {
    // A neighbour port taken between the check and the JVM's bind, or a start that tripped over the
    // machine's load: one more try on new ports, in a new home (the first error is kept in the second's).
    try {
      return await startOnce(version, options)
    } catch (again) {
      throw new Error(`${(again as Error).message}\n(first attempt: ${(err as Error).message.split('\n')[0]})`)
    }
  }
}

async function startOnce (version: NacosVersion, options: ModernNacosOptions): Promise<ModernNacos> {
  const jar = jarPath(MODULE[version])
  const port = await portQuad()
  const home = mkdtempSync(join(tmpdir(), `lameduck-nacos${version[0]}-`))
  const props: Record<string, string | number | boolean> = {
    'nacos.standalone': true,
    'nacos.home': home,
    'server.address': '127.0.0.1',
    'nacos.inetutils.ip-address': '127.0.0.1',
    [version === '2.3.1' ? 'server.port' : 'nacos.server.main.port']: port,
    'lab.exit-on-stdin-eof': true,
    ...options.properties
  }
  const java = process.env.JAVA_HOME ? join(process.env.JAVA_HOME, 'bin', 'java') : 'java'
  // stdin stays open as a lifeline: the bootstrap halts the JVM when it closes.
  const child = spawn(java, [...JVM_FLAGS, ...Object.entries(props).map(([k, v]) => `-D${k}=${String(v)}`), '-jar', jar], { cwd: home, detached: true, stdio: ['pipe', 'pipe', 'pipe'] })
  running.add(child)
  const lines: string[] = []
  const exited = new Promise<void>((resolve) => child.once('exit', () => { running.delete(child); resolve() }))
  const tail = (n = 40): string => lines.slice(-n).join('\n')
  const close = async (): Promise<void> => {
    killGroup(child, 'SIGTERM')
    const timer = setTimeout(() => killGroup(child, 'SIGKILL'), 10_000)
    await exited
    clearTimeout(timer)
    rmSync(home, { recursive: true, force: true })
  }
  const timeoutMs = options.startTimeoutMs ?? 180_000
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`Nacos ${version} did not start in ${timeoutMs} ms:\n${tail()}`)), timeoutMs)
      let rest = ''
      const onData = (chunk: Buffer): void => {
        const parts = (rest + chunk.toString('utf8')).split('\n')
        rest = parts.pop()!
        for (const line of parts) {
          lines.push(line)
          if (lines.length > 2000) lines.splice(0, 1000)
          if (STARTED[version].test(line)) { clearTimeout(timer); resolve() }
        }
      }
      child.stdout!.on('data', onData)
      child.stderr!.on('data', onData)
      child.once('exit', (code, signal) => { clearTimeout(timer); reject(new Error(`Nacos ${version} exited (${code ?? signal}) before it served:\n${tail()}`)) })
    })
  } catch (err) {
    await close()
    throw err
  }
  const base = `http://127.0.0.1:${port}/nacos`
  const call = async (method: string, path: string, params: Record<string, string | number | boolean> = {}): Promise<{ status: number, text: string }> => {
    const query = new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, String(v)]))
    const res = await fetch(`${base}${path}?${query}`, { method, headers: { 'user-agent': 'Nacos-Java-Client:v1.0.0' } })
    return { status: res.status, text: await res.text() }
  }
  return { version, serverList: `127.0.0.1:${port}`, port, pid: child.pid!, call, tail, close }
}

/** `{ skip }` for node:test when LAMEDUCK_REAL=skip; throws a clear error when Java is missing. */
export function realTestOptions (): { skip?: string } {
  if (process.env.LAMEDUCK_REAL === 'skip') return { skip: 'LAMEDUCK_REAL=skip' }
  const probe = spawnSync('java', ['-version'], { stdio: 'ignore' })
  if (probe.error !== undefined || probe.status !== 0) throw new Error('java is not on the PATH: the real-server tests need Java 17 and Maven (set LAMEDUCK_REAL=skip to skip them)')
  return {}
}

/**
 * A runtime switch of the naming module (SwitchDomain), through each version's own operator API.
 * The write goes through the consistency layer and reaches the live switches asynchronously (under
 * load a push task 500 ms later still saw the old value): resolves once GET switches shows it.
 * `field` names the SwitchDomain property when it differs from the entry (pushCacheMillis → defaultPushCacheMillis).
 */
export async function setSwitch (server: ModernNacos, entry: string, value: string | number | boolean, field = entry): Promise<void> {
  const path = server.version === '2.3.1' ? '/v1/ns/operator/switches' : '/v3/admin/ns/ops/switches'
  const answer = await server.call('PUT', path, { entry, value })
  if (answer.status !== 200 || !/ok/.test(answer.text)) throw new Error(`switch ${entry}=${String(value)} on Nacos ${server.version}: ${answer.status} ${answer.text}`)
  const deadline = Date.now() + 30_000
  for (;;) {
    const read = await server.call('GET', path)
    const body = JSON.parse(read.text) as Record<string, unknown> & { data?: Record<string, unknown> }
    const switches = server.version === '2.3.1' ? body : body.data ?? {}
    if (String(switches[field]) === String(value)) return
    if (Date.now() > deadline) throw new Error(`switch ${entry}=${String(value)} on Nacos ${server.version} not applied within 30 s (${field} = ${String(switches[field])})`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
