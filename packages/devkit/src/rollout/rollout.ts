// The rolling-deploy lab: providers as real child processes behind a traffic
// path, open-loop load from a consumer, and a Kubernetes rolling update from
// v1 to v2 in the chosen mode. Returns the loss report.
import { existsSync } from 'node:fs'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { Agent } from 'undici'
import { computePlan } from '@lameduck/cli'
import { LameduckError, propagationWindow, type PropagationWindow } from '@lameduck/core'
import { Deployment } from './deployment.ts'
import { LoadGenerator } from './load.ts'
import { resolveRollout, type ResolvedRollout, type RolloutOptions } from './options.ts'
import { createPath, SERVICE, type TrafficPath } from './paths.ts'
import { LISTENER_FD, Pod, type SidecarContainer } from './pod.ts'
import type { ProviderConfig } from './provider-process.ts'
import { buildReport, type RolloutReport } from './report.ts'
import { ISTIO, sidecarDrainTimeMs } from './sidecar.ts'
import { agentOptions, scheme, serveSpec } from './transport.ts'

const fromSource = import.meta.url.endsWith('.ts')
const execArgv = fromSource ? ['--conditions=@lameduck/source'] : []

/**
 * The lameduck CLI, resolved through its package (`@lameduck/cli/bin`, a devkit
 * dependency). Missing is an error, never a silent fallback: the lab would then
 * measure some other preStop than the one it reports.
 */
function cliBin (): string {
  let file: string
  try {
    file = fileURLToPath(import.meta.resolve('@lameduck/cli/bin'))
  } catch (err) {
    throw new LameduckError('LAMEDUCK_ERR_CLI_MISSING', 'cannot resolve @lameduck/cli/bin: install @lameduck/cli (a dependency of @lameduck/devkit)', { cause: err })
  }
  if (!existsSync(file)) throw new LameduckError('LAMEDUCK_ERR_CLI_MISSING', `@lameduck/cli/bin resolves to ${file}, which does not exist: build @lameduck/cli (npm run build)`)
  return file
}

/** The sidecar container's preStop: only lameduck mode coordinates it with the app. */
function waitDrainedFor (o: ResolvedRollout): string[] | null {
  if (o.mode !== 'lameduck') return null
  return [process.execPath, ...execArgv, cliBin(), 'wait-drained', '--admin', '{admin}', '--interval', '0.1']
}

/** The preStop command of each mode, as a pod manifest would hold it. */
function preStopFor (o: ResolvedRollout): string[] | null {
  if (o.mode === 'naive') return null
  if (o.mode === 'sleep') return ['sleep', String(o.sleepSeconds * o.scale)]
  return [process.execPath, ...execArgv, cliBin(), 'prestop', '--admin', '{admin}']
}

/** A preStop as the log shows it: the CLI as `lameduck` (not node and the path of its sources), the pod's admin URL filled in. */
export function shownPreStop (preStop: string[], admin: string | null): string {
  const cli = [process.execPath, ...execArgv, cliBin()]
  const words = cli.every((w, i) => preStop[i] === w) ? ['lameduck', ...preStop.slice(cli.length)] : preStop
  return words.map((w) => w.replaceAll('{admin}', admin ?? '(not listening)')).join(' ')
}

/** The lab's options, plus an externally supplied traffic path (e.g. a real registry server and a Java consumer, in test/real). */
export interface RolloutRun extends RolloutOptions {
  /** Builds the traffic path instead of `registry`; the path may bring its own load source. */
  path?: (o: ResolvedRollout) => Promise<TrafficPath>
}

export async function runRollout (options: RolloutRun = {}): Promise<RolloutReport> {
  const { path: makePath, ...rest } = options
  const o = resolveRollout(rest)
  const path = await (makePath ?? createPath)(o)
  const b = budget(o, path)
  const preStop = preStopFor(o)
  const probeAgent = new Agent(agentOptions(o.transport))
  const pods = podFactory(o, path, b, probeAgent)
  const deployment = deploymentFor(o, path, pods.make, preStop, b.graceMs)
  // The consumer's own event-loop lag (it shares the 2 cores with everything else).
  const consumerLag = monitorEventLoopDelay({ resolution: 10 })
  const load = path.load ?? new LoadGenerator({ url: path.consumer.url, dispatcher: path.consumer.dispatcher, rps: o.rps, slowShare: o.slowShare, timeoutMs: 10_000, ...(path.consumer.trace ? { trace: path.consumer.trace } : {}) })
  try {
    o.log(`starting ${o.providers} v1 providers (${path.name}, mode ${o.mode}, window ${b.window.totalMs} ms)`)
    await deployment.scaleUp('v1')
    // Let the consumer discover the fleet before any load is measured.
    await waitDiscovered(path, o)
    const loadStartedAt = Date.now()
    consumerLag.enable()
    await load.start()
    await sleep(o.settleMs)
    const rolloutStartedAt = Date.now()
    o.log('rolling update v1 → v2')
    await deployment.rollTo('v2')
    const rolloutEndedAt = Date.now()
    o.log(`rollout done in ${rolloutEndedAt - rolloutStartedAt} ms`)
    await sleep(o.settleMs)
    await load.stop()
    consumerLag.disable()
    return buildReport({
      consumerLag: { p99Ms: Math.round(consumerLag.percentile(99) / 1e6), maxMs: Math.round(consumerLag.max / 1e6) },
      scenario: { registry: o.registry, cluster: o.cluster, nacosPush: o.nacosPush, sidecar: o.sidecar, exitOnZeroActiveConnections: o.exitOnZeroActiveConnections, transport: o.transport, mode: o.mode, consumer: o.consumer, providers: o.providers, rps: o.rps, scale: o.scale, windowMs: b.window.totalMs, gracePeriodMs: b.graceMs, preStop, path: path.describe, ...path.scenario },
      records: load.records,
      pods: deployment.pods,
      terminations: deployment.terminations,
      loadStartedAt,
      rolloutStartedAt,
      rolloutEndedAt,
      warmupMs: o.warmupMs
    })
  } finally {
    await load.stop()
    await deployment.killAll()
    consumerLag.disable()
    await Promise.all(pods.sidecars.map((s) => s.close()))
    await path.close()
    await probeAgent.close()
  }
}

interface Budget {
  window: PropagationWindow
  maxRequestMs: number
  sidecarDrainTimeoutMs: number
  plan: ReturnType<typeof computePlan>
  /** The pod's terminationGracePeriodSeconds, in ms. */
  graceMs: number
}

/** The mode's shutdown budget: lameduck mode takes what `lameduck plan` recommends; naive setups keep Kubernetes' 30 s. */
function budget (o: ResolvedRollout, path: TrafficPath): Budget {
  const window = propagationWindow(path.windows)
  const maxRequestMs = 2_000
  // The sidecar drain step waits for Envoy's inbound connections, or until those left are
  // idle and told to close (the plugin's idleQuietMs, scaled). Envoy never closes an idle
  // keep-alive connection, so without the request gauges the bound decides: Envoy's drain
  // time (Istio's 45 s, scaled; whole seconds for the real binary), a stats flush (100 ms)
  // and a poll or two (100 ms each).
  const sidecarDrainTimeoutMs = sidecarDrainTimeMs(o) + 100 + 2 * 100
  // The plan's fixed kill and close margins stay unscaled.
  const plan = computePlan({ windows: path.windows, maxRequestMs, ...(o.sidecar ? { sidecar: 'istio' as const, sidecarDrainTimeoutMs } : {}) })
  const graceMs = o.gracePeriodSeconds !== null
    ? o.gracePeriodSeconds * 1000 * o.scale
    : o.mode === 'lameduck' ? plan.terminationGracePeriodSeconds * 1000 : o.mode === 'sleep' ? (o.sleepSeconds + 30) * 1000 * o.scale : 30_000 * o.scale
  return { window, maxRequestMs, sidecarDrainTimeoutMs, plan, graceMs }
}

/** Makes provider pods (with their Envoy sidecar when the scenario has one); keeps the sidecars to close at the end. */
function podFactory (o: ResolvedRollout, path: TrafficPath, b: Budget, probeAgent: Agent): { make: (version: string) => Promise<Pod>, sidecars: SidecarContainer[] } {
  const sidecars: SidecarContainer[] = []
  const serve = serveSpec(o.transport)
  const scaled = (ms: number): number => Math.max(100, Math.round(ms * o.scale))
  let seq = 0
  const make = async (version: string): Promise<Pod> => {
    const id = `${SERVICE}-${version}-${++seq}`
    let pod: Pod | null = null
    const sidecar = o.sidecar ? await (await import('./sidecar.ts')).startSidecar(o, () => pod?.admin ?? null, waitDrainedFor(o), path.registryOrigin) : undefined
    if (sidecar) sidecars.push(sidecar)
    const config: ProviderConfig = {
      id,
      version,
      mode: o.mode,
      service: SERVICE,
      registry: throughOutbound(path.providerRegistry, sidecar?.outboundUrl ?? null),
      serve,
      windows: path.windows,
      warmupMs: o.warmupMs,
      maxRequestMs: b.maxRequestMs,
      bootMs: o.bootMs,
      shutdownTimeoutMs: o.mode === 'lameduck' && o.gracePeriodSeconds === null ? b.plan.plugin.shutdownTimeoutMs : Math.max(b.graceMs - 500, b.window.totalMs),
      ignoreSigterm: o.stubbornProvider,
      ...(sidecar ? { advertisePort: sidecar.port, listenFd: LISTENER_FD, sidecar: { envoyAdmin: sidecar.adminUrl, unavailableWaitMs: scaled(ISTIO.terminationDrainDurationMs), drainTimeoutMs: b.sidecarDrainTimeoutMs, idleQuietMs: scaled(2_000) } } : {})
    }
    pod = new Pod({
      config,
      execArgv,
      probe: { path: '/health/ready', periodMs: 200, timeoutMs: 1_000, successThreshold: 1, failureThreshold: 1, scheme: scheme(o.transport), dispatcher: probeAgent },
      log: o.log,
      ...(sidecar ? { sidecar, listener: sidecar.appListener } : {})
    })
    return pod
  }
  return { make, sidecars }
}

/** The Deployment controller, terminating pods with the mode's preStop and grace period, and saying so. */
function deploymentFor (o: ResolvedRollout, path: TrafficPath, makePod: (version: string) => Promise<Pod>, preStop: string[] | null, graceMs: number): Deployment {
  return new Deployment({
    strategy: { replicas: o.providers, maxSurge: o.maxSurge, maxUnavailable: o.maxUnavailable },
    makePod: (version) => {
      const pod = makePod(version)
      pod.then((p) => p.once('ready', () => o.log(`pod ${p.id} ready`))).catch(() => {})
      return pod
    },
    terminate: (pod) => {
      o.log(`pod ${pod.id} deleted: ${preStop === null ? 'no preStop' : `preStop ${shownPreStop(preStop, pod.admin)}`}, grace ${graceMs} ms`)
      return pod.terminate({ preStop, gracePeriodMs: graceMs }).then((r) => {
        o.log(`pod ${pod.id} exited ${r.killed ? 'SIGKILLed at the grace period' : `with ${r.exitCode ?? r.signal}`} ${r.exitedAt - r.deletedAt} ms after deletion`)
        return r
      })
    },
    ...(path.onEndpoints ? { onEndpoints: path.onEndpoints } : {}),
    progressDeadlineMs: 60_000
  })
}

async function waitDiscovered (path: TrafficPath, o: ResolvedRollout): Promise<void> {
  if (path.discovered) await path.discovered(o.providers)
  if (path.discovered && path.load !== undefined) return
  // Probe through the consumer until every v1 provider answered once (or 30 s).
  const seen = new Set<string>()
  const { request } = await import('undici')
  const deadline = Date.now() + 30_000
  while (seen.size < o.providers && Date.now() < deadline) {
    try {
      // A fresh connection each time: behind a Service, a reused one stays on one pod (conntrack).
      const res = await request(path.consumer.url('/work?ms=0'), { dispatcher: path.consumer.dispatcher, reset: true })
      const id = res.headers['x-instance']
      await res.body.dump()
      if (typeof id === 'string') seen.add(id)
    } catch {}
    await sleep(20)
  }
}

/** The provider's registry address as its sidecar's outbound listener captures it. */
function throughOutbound (registry: ProviderConfig['registry'], outboundUrl: string | null): ProviderConfig['registry'] {
  if (outboundUrl === null) return registry
  if (registry.kind === 'eureka') return { ...registry, url: new URL(new URL(registry.url).pathname, outboundUrl).href.replace(/\/$/, '') }
  if (registry.kind === 'nacos') return { ...registry, serverList: new URL(outboundUrl).host }
  return registry
}

function sleep (ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
