// What Istio's pilot-agent does to its Envoy on SIGTERM (pkg/envoy/agent.go terminate()):
// POST /drain_listeners?inboundonly&graceful, then either wait terminationDrainDuration
// and kill Envoy (the default: the drain time, 45 s, never runs out), or, with
// EXIT_ON_ZERO_ACTIVE_CONNECTIONS, sleep MINIMUM_DRAIN_DURATION and poll the active
// connections every second until they are 0, unavailable (-1) or 5 polls in a row fail.
// Written from Istio's rules, independent of @lameduck/envoy's counting, so a lab that
// uses both tests one against the other.
import { request } from 'undici'
import type { LocalEnvoy } from './local-envoy.ts'

/** What pilot-agent needs of its Envoy: the admin, and a way to end the process (the stand-in, or the real binary). */
export type IstioProxy = Pick<LocalEnvoy, 'adminUrl' | 'closed' | 'close'> & { options?: Pick<LocalEnvoy['options'], 'istio'> }

export interface IstioTerminateOptions {
  /** ProxyConfig.terminationDrainDuration. Default 5000. */
  terminationDrainDurationMs?: number
  /** EXIT_ON_ZERO_ACTIVE_CONNECTIONS. Default: what the Envoy's `istio` option says. */
  exitOnZeroActiveConnections?: boolean
  /** MINIMUM_DRAIN_DURATION. Default 5000. */
  minimumDrainDurationMs?: number
  /** activeConnectionCheckDelay. Default 1000. */
  checkIntervalMs?: number
}

export type IstioTerminateOutcome = 'termination-drain-duration' | 'zero' | 'unavailable' | 'stats-errors' | 'envoy-exited'

export interface IstioTerminateResult {
  outcome: IstioTerminateOutcome
  /** Each count read while polling (exit-on-zero mode). */
  readings: number[]
  elapsedMs: number
}

/** Istio's known listeners, not counted (agent.go knownIstioListeners): status and Prometheus ports, admin. */
function knownListeners (ports: readonly number[]): Set<string> {
  return new Set([
    ...ports.map((p) => `listener.0.0.0.0_${p}.downstream_cx_active`),
    'listener.admin.downstream_cx_active',
    'listener.admin.main_thread.downstream_cx_active'
  ])
}

/**
 * activeProxyConnections() on a `/stats?usedonly&filter=downstream_cx_active$` body: -1
 * when empty. `knownPorts`: ENVOY_STATUS_PORT and ENVOY_PROMETHEUS_PORT (15021, 15090).
 */
export function istioActiveConnections (body: string, knownPorts: readonly number[] = [15021, 15090]): number {
  if (body.length === 0) return -1
  const known = knownListeners(knownPorts)
  let sum = 0
  for (const line of body.split('\n')) {
    const parts = line.split(':')
    if (parts.length !== 2) continue
    const name = parts[0]!
    if (!name.startsWith('listener.') || name.includes('worker_')) continue
    if (name.startsWith('listener.envoy_internal_') || known.has(name)) continue
    const value = parts[1]!.trim()
    if (!/^\d+$/.test(value)) continue
    sum += Number(value)
  }
  return sum
}

/** Runs pilot-agent's terminate() against an Envoy, then closes it (the SIGKILL). */
export async function terminateLikeIstio (envoy: IstioProxy, options: IstioTerminateOptions = {}): Promise<IstioTerminateResult> {
  const started = Date.now()
  const istio = envoy.options?.istio ?? false
  const exitOnZero = options.exitOnZeroActiveConnections ?? (istio !== false && istio.exitOnZeroActiveConnections)
  const result = (outcome: IstioTerminateOutcome, readings: number[] = []): IstioTerminateResult => ({ outcome, readings, elapsedMs: Date.now() - started })
  try {
    const res = await request(`${envoy.adminUrl}/drain_listeners?inboundonly&graceful`, { method: 'POST' })
    await res.body.dump() // the status is not checked (admin.go)
  } catch {}
  let outcome: IstioTerminateOutcome
  const readings: number[] = []
  if (!exitOnZero) {
    outcome = await Promise.race([
      envoy.closed.then(() => 'envoy-exited' as const),
      delay(options.terminationDrainDurationMs ?? 5000).then(() => 'termination-drain-duration' as const)
    ])
  } else {
    outcome = await pollToZero(envoy, options, readings)
  }
  await envoy.close()
  return result(outcome, readings)
}

async function pollToZero (envoy: IstioProxy, options: IstioTerminateOptions, readings: number[]): Promise<IstioTerminateOutcome> {
  let exited = false
  envoy.closed.then(() => { exited = true }, () => {})
  await delay(options.minimumDrainDurationMs ?? 5000)
  let errors = 0
  for (;;) {
    await delay(options.checkIntervalMs ?? 1000)
    if (exited) return 'envoy-exited'
    let count: number
    try {
      const res = await request(`${envoy.adminUrl}/stats?usedonly&filter=downstream_cx_active$`, { headersTimeout: 2000, bodyTimeout: 2000 })
      const body = await res.body.text()
      if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`)
      count = istioActiveConnections(body)
    } catch {
      if (++errors > 4) return 'stats-errors'
      continue
    }
    readings.push(count)
    if (count === -1) return 'unavailable'
    if (count === 0) return 'zero'
    errors = 0
  }
}

function delay (ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
