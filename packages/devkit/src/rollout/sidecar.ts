// The sidecar container of a pod in the lab: a local Envoy with Istio's bootstrap
// in front of the app, the app's own registry calls captured by its outbound
// listener, and terminated the way Istio's pilot-agent does it (terminateLikeIstio):
// drain the inbound listeners gracefully, then wait terminationDrainDuration — or, with
// EXIT_ON_ZERO_ACTIVE_CONNECTIONS, poll the connection count to 0 — and exit. In
// lameduck mode its preStop is `lameduck wait-drained`, so it outlives the app's drain.
// The Envoy is the devkit stand-in, or (sidecar 'envoy-real') the real binary with the
// devkit's Istio-shaped bootstrap, its admin on 127.0.0.1.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createServer, type Server } from 'node:net'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { startRealEnvoy, terminateLikeIstio, type IstioProxy } from '../envoy/index.ts'
import type { ResolvedRollout } from './options.ts'
import type { SidecarContainer } from './pod.ts'

/** Istio's defaults, scaled with the rest: terminationDrainDuration, MINIMUM_DRAIN_DURATION, drain-time-s. */
export const ISTIO = { terminationDrainDurationMs: 5_000, minimumDrainDurationMs: 5_000, drainTimeMs: 45_000, checkIntervalMs: 1_000 }

/**
 * The app container's port, bound here on port 0 and kept bound: the app inherits
 * the listening socket (Pod's `listener`), so the port never changes hands. Until
 * then a connection has no app behind it and is closed, as a pod without its app.
 * (A grpc-js app cannot listen on an inherited socket: it closes it and binds the
 * same port at once, grpc-provider.ts.)
 */
async function appListener (): Promise<Server> {
  const server = createServer((socket) => socket.destroy())
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => { server.off('error', reject); resolve() })
  })
  return server
}

/**
 * Envoy's drain time as the sidecar runs it: Istio's 45 s scaled. The real binary takes
 * `--drain-time-s` in whole seconds (1 at least), so its drain time is rounded.
 */
export function sidecarDrainTimeMs (o: Pick<ResolvedRollout, 'scale' | 'sidecar'>): number {
  const ms = ISTIO.drainTimeMs * o.scale
  return o.sidecar === 'envoy-real' ? Math.max(1, Math.round(ms / 1000)) * 1000 : Math.max(100, Math.round(ms))
}

/** The devkit's own command, which runs the stand-in as a process (`lameduck-devkit envoy`). */
const DEVKIT_BIN = fileURLToPath(new URL('../../bin/lameduck-devkit.js', import.meta.url))

/** The request gauges a pod annotates for (sidecar.istio.io/statsInclusionSuffixes): the app's drain step ends once the consumers' pooled connections are idle, which Envoy never closes. */
const INCLUSION_SUFFIXES = ['downstream_rq_active', 'downstream_rq_total']

interface SidecarProxy { port: number, adminUrl: string, outboundUrl: string | null, istio: IstioProxy, close: () => Promise<void> }

/**
 * The stand-in as its own process (`lameduck-devkit envoy`), as a sidecar container is: in the lab's
 * process it shared one event loop with the consumer and every other pod's proxy, and under a CPU hog
 * that process accepted connections more slowly than the consumer's pool opened them. Requests then
 * waited seconds in the listener's accept queue (Recv-Q at 100–231, parsed 1.5–2.2 s after they were
 * sent), which the lab counted as lost (CONTRIBUTING, 2026-11-28).
 */
async function standInProxy (o: ResolvedRollout, appPort: number, registryOrigin: string | undefined): Promise<SidecarProxy> {
  const args = [DEVKIT_BIN, 'envoy', '--listen', '0', '--admin', '0', '--upstream', `http://127.0.0.1:${appPort}`,
    '--drain-time-s', String(sidecarDrainTimeMs(o) / 1000), '--stats-flush-interval-ms', '100',
    '--istio', '--stats-inclusion-suffixes', INCLUSION_SUFFIXES.join(','),
    ...(o.exitOnZeroActiveConnections ? ['--exit-on-zero-active-connections'] : []),
    ...(registryOrigin ? ['--outbound', registryOrigin] : [])]
  const child = spawn(process.execPath, [...process.execArgv.filter((a) => a.startsWith('--conditions')), ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  const exited = once(child, 'exit').then(() => {})
  let err = ''
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { err += chunk })
  const lines = createInterface({ input: child.stdout })
  const seen: { port?: number, outboundUrl?: string, adminUrl?: string } = {}
  try {
    await new Promise<void>((resolve, reject) => {
      exited.then(() => { reject(new Error(`the Envoy stand-in exited before it listened: ${err.trim() || '(no output)'}`)) }, reject)
      lines.on('line', (line) => {
        const listening = /^envoy listening on http:\/\/127\.0\.0\.1:(\d+) /.exec(line)
        if (listening !== null) seen.port = Number(listening[1])
        const outbound = /^envoy outbound listening on (\S+) /.exec(line)
        if (outbound !== null) seen.outboundUrl = outbound[1]!
        const admin = /^envoy admin on (\S+)/.exec(line)
        if (admin !== null) { seen.adminUrl = admin[1]!; resolve() }
      })
    })
  } catch (e) {
    child.kill('SIGKILL')
    throw e
  }
  const close = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    await exited
  }
  const istio = { exitOnZeroActiveConnections: o.exitOnZeroActiveConnections, statsInclusionSuffixes: INCLUSION_SUFFIXES }
  return { port: seen.port!, adminUrl: seen.adminUrl!, outboundUrl: registryOrigin ? seen.outboundUrl ?? null : null, istio: { adminUrl: seen.adminUrl!, closed: exited, close, options: { istio } }, close }
}

async function realProxy (o: ResolvedRollout, appPort: number, registryOrigin: string | undefined): Promise<SidecarProxy> {
  const istio = { exitOnZeroActiveConnections: o.exitOnZeroActiveConnections, statsInclusionSuffixes: INCLUSION_SUFFIXES }
  const envoy = await startRealEnvoy({
    upstream: `http://127.0.0.1:${appPort}`,
    // A grpc-js app speaks HTTP/2 only: the inbound cluster too (the listener's AUTO codec takes h2c from the consumers).
    http2Upstream: o.transport === 'grpc',
    ...(registryOrigin ? { outbound: registryOrigin } : {}),
    drainTimeS: sidecarDrainTimeMs(o) / 1000,
    drainStrategy: 'immediate',
    istioStats: istio
  })
  // pilot-agent ends its Envoy with SIGKILL once terminate() is done.
  const closed = envoy.exited.then(() => {})
  return { port: envoy.inboundPort, adminUrl: envoy.adminUrl, outboundUrl: registryOrigin ? envoy.outboundUrl : null, istio: { adminUrl: envoy.adminUrl, closed, close: envoy.kill, options: { istio } }, close: envoy.kill }
}

export interface LabSidecar extends SidecarContainer {
  /** The sidecar's upstream: a socket listening on 127.0.0.1 for the app container to inherit. */
  readonly appListener: Server
  /** The outbound listener the app sends its registry calls to, or null. */
  readonly outboundUrl: string | null
}

export async function startSidecar (o: ResolvedRollout, appAdmin: () => string | null, waitDrainedCommand: string[] | null, registryOrigin: string | undefined): Promise<LabSidecar> {
  const listener = await appListener()
  const appPort = (listener.address() as { port: number }).port
  const scaled = (ms: number): number => Math.max(100, Math.round(ms * o.scale))
  const envoy = await (o.sidecar === 'envoy-real' ? realProxy : standInProxy)(o, appPort, registryOrigin)
    .catch(async (err: unknown) => { listener.close(); throw err })
  let terminated: Promise<void> | null = null
  return {
    appListener: listener,
    port: envoy.port,
    adminUrl: envoy.adminUrl,
    outboundUrl: envoy.outboundUrl,
    terminate () {
      terminated ??= (async () => {
        const admin = appAdmin()
        if (waitDrainedCommand !== null && admin !== null) {
          const [cmd, ...args] = waitDrainedCommand.map((a) => a.replaceAll('{admin}', admin))
          const hook = spawn(cmd!, args, { stdio: 'ignore' })
          await once(hook, 'exit')
        }
        // SIGTERM to pilot-agent.
        await terminateLikeIstio(envoy.istio, {
          terminationDrainDurationMs: scaled(ISTIO.terminationDrainDurationMs),
          minimumDrainDurationMs: scaled(ISTIO.minimumDrainDurationMs),
          checkIntervalMs: scaled(ISTIO.checkIntervalMs)
        })
      })()
      return terminated
    },
    close: async () => { if (listener.listening) listener.close(); await envoy.close() }
  }
}
