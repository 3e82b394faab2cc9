// The rolling-deploy lab: providers as real child processes behind a traffic
// path, open-loop load from a consumer, and a Kubernetes rolling update from
// v1 to v2 in the chosen mode. Returns the loss report.
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { LameduckError, propagationWindow } from '@lameduck/core'
import { Deployment } from './deployment.ts'
import { LoadGenerator } from './load.ts'
import { resolveRollout, type ResolvedRollout, type RolloutOptions } from './options.ts'
import { createPath, SERVICE, type TrafficPath } from './paths.ts'
import { Pod, type SidecarContainer } from './pod.ts'
import type { ProviderConfig } from './provider-app.ts'
import { buildReport, type RolloutReport } from './report.ts'

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

export async function runRollout (options: RolloutOptions = {}): Promise<RolloutReport> {
  const o = resolveRollout(options)
  const path = await createPath(o)
  const window = propagationWindow(path.windows)
  const maxRequestMs = 2_000
  // What `lameduck plan` recommends: window + longest request + slack; naive setups keep Kubernetes' 30 s.
  const graceMs = o.gracePeriodSeconds !== null
    ? o.gracePeriodSeconds * 1000 * o.scale
    : o.mode === 'lameduck' ? window.totalMs + maxRequestMs + 2_000 : o.mode === 'sleep' ? (o.sleepSeconds + 30) * 1000 * o.scale : 30_000 * o.scale
  const preStop = preStopFor(o)
  const sidecars: SidecarContainer[] = []
  let seq = 0

  const makePod = async (version: string): Promise<Pod> => {
    const id = `${SERVICE}-${version}-${++seq}`
    let pod: Pod | null = null
    const sidecar = o.sidecar ? await (await import('./sidecar.ts')).startSidecar(o, () => pod?.admin ?? null, waitDrainedFor(o)) : undefined
    if (sidecar) sidecars.push(sidecar)
    const config: ProviderConfig = {
      id,
      version,
      mode: o.mode,
      service: SERVICE,
      registry: path.providerRegistry,
      windows: path.windows,
      warmupMs: o.warmupMs,
      maxRequestMs,
      bootMs: o.bootMs,
      shutdownTimeoutMs: Math.max(graceMs - 500, window.totalMs),
      ignoreSigterm: o.stubbornProvider,
      ...(sidecar ? { advertisePort: sidecar.port, listenPort: sidecar.appPort, sidecar: { envoyAdmin: sidecar.adminUrl } } : {})
    }
    pod = new Pod({
      config,
      execArgv,
      probe: { path: '/health/ready', periodMs: 200, timeoutMs: 1_000, successThreshold: 1, failureThreshold: 1 },
      log: o.log,
      ...(sidecar ? { sidecar } : {})
    })
    return pod
  }

  const deployment = new Deployment({
    strategy: { replicas: o.providers, maxSurge: o.maxSurge, maxUnavailable: o.maxUnavailable },
    makePod: (version) => {
      const pod = makePod(version)
      pod.then((p) => p.once('ready', () => o.log(`pod ${p.id} ready`))).catch(() => {})
      return pod
    },
    terminate: (pod) => {
      o.log(`pod ${pod.id} deleted: ${preStop === null ? 'no preStop' : `preStop ${preStop.join(' ')}`}, grace ${graceMs} ms`)
      return pod.terminate({ preStop, gracePeriodMs: graceMs }).then((r) => {
        o.log(`pod ${pod.id} exited ${r.killed ? 'SIGKILLed at the grace period' : `with ${r.exitCode ?? r.signal}`} ${r.exitedAt - r.deletedAt} ms after deletion`)
        return r
      })
    },
    ...(path.onEndpoints ? { onEndpoints: path.onEndpoints } : {}),
    progressDeadlineMs: 60_000
  })

  const load = new LoadGenerator({ url: path.consumer.url, dispatcher: path.consumer.dispatcher, rps: o.rps, slowShare: o.slowShare, timeoutMs: 10_000 })
  try {
    o.log(`starting ${o.providers} v1 providers (${path.name}, mode ${o.mode}, window ${window.totalMs} ms)`)
    await deployment.scaleUp('v1')
    // Let the consumer discover the fleet before any load is measured.
    await waitDiscovered(path, o)
    const loadStartedAt = Date.now()
    load.start()
    await sleep(o.settleMs)
    const rolloutStartedAt = Date.now()
    o.log('rolling update v1 → v2')
    await deployment.rollTo('v2')
    const rolloutEndedAt = Date.now()
    o.log(`rollout done in ${rolloutEndedAt - rolloutStartedAt} ms`)
    await sleep(o.settleMs)
    await load.stop()
    const report = buildReport({
      scenario: { registry: o.registry, sidecar: o.sidecar, mode: o.mode, consumer: o.consumer, providers: o.providers, rps: o.rps, scale: o.scale, windowMs: window.totalMs, gracePeriodMs: graceMs, preStop, path: path.describe },
      records: load.records,
      pods: deployment.pods,
      terminations: deployment.terminations,
      loadStartedAt,
      rolloutStartedAt,
      rolloutEndedAt,
      warmupMs: o.warmupMs
    })
    return report
  } finally {
    await load.stop()
    await deployment.killAll()
    await Promise.all(sidecars.map((s) => s.close()))
    await path.close()
  }
}

async function waitDiscovered (path: TrafficPath, o: ResolvedRollout): Promise<void> {
  if (path.discovered) return path.discovered(o.providers)
  // Probe through the consumer until every v1 provider answered once (or 30 s).
  const seen = new Set<string>()
  const { request } = await import('undici')
  const deadline = Date.now() + 30_000
  while (seen.size < o.providers && Date.now() < deadline) {
    try {
      const res = await request(path.consumer.url('/work?ms=0'), { dispatcher: path.consumer.dispatcher })
      const id = res.headers['x-instance']
      await res.body.dump()
      if (typeof id === 'string') seen.add(id)
    } catch {}
    await sleep(20)
  }
}

function sleep (ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
