// One knob for the whole example: SCALE multiplies the Kubernetes and Istio
// durations, so the sidecar, the app and the consumer agree on them. SCALE=1
// runs the production values. POD picks a pod's ports, so two run side by side.

/** Kubernetes and Istio defaults the example scales down. */
export const PRODUCTION = {
  /** The `kubernetes` window preset: EndpointSlice → kube-proxy / ingress propagation, worst case. */
  endpointLagMs: 15_000,
  /** What the consumer's Service stand-in applies: a typical propagation, well inside the worst case. */
  typicalEndpointLagMs: 5_000,
  /** Istio's drainDuration, Envoy's --drain-time-s 45: a graceful drain stops the listener after it. */
  envoyDrainTimeMs: 45_000,
  /** The plugin's sidecar.drainTimeoutMs: bound on waiting for Envoy's connections to close. */
  sidecarDrainTimeoutMs: 30_000,
  /** The plugin's sidecar.checkIntervalMs: pause between connection counts. */
  sidecarCheckIntervalMs: 1_000,
  /** The readinessProbe `lameduck plan` writes: periodSeconds 2. */
  readinessPeriodMs: 2_000
}

export const SERVICE = 'orders'

export interface Settings {
  scale: number
  endpointLagMs: number
  typicalEndpointLagMs: number
  envoyDrainTimeMs: number
  sidecarDrainTimeoutMs: number
  sidecarCheckIntervalMs: number
  readinessPeriodMs: number
}

export const DEFAULT_SCALE = 0.2

export function readSettings (env: NodeJS.ProcessEnv = process.env): Settings {
  const scale = env.SCALE === undefined || env.SCALE === '' ? DEFAULT_SCALE : Number(env.SCALE)
  if (!Number.isFinite(scale) || scale <= 0) throw new Error(`SCALE must be a positive number (1 = production durations, 0.2 = five times faster), got '${env.SCALE}'`)
  const scaled = (ms: number, min = 1): number => Math.max(min, Math.round(ms * scale))
  return {
    scale,
    endpointLagMs: scaled(PRODUCTION.endpointLagMs),
    typicalEndpointLagMs: scaled(PRODUCTION.typicalEndpointLagMs),
    envoyDrainTimeMs: scaled(PRODUCTION.envoyDrainTimeMs),
    // A bound, not a wait: scaled down no further than a starved machine needs to see its connections go.
    sidecarDrainTimeoutMs: scaled(PRODUCTION.sidecarDrainTimeoutMs, 10_000),
    sidecarCheckIntervalMs: scaled(PRODUCTION.sidecarCheckIntervalMs, 20),
    readinessPeriodMs: scaled(PRODUCTION.readinessPeriodMs, 20)
  }
}

export interface PodPorts {
  /** Envoy's inbound listener: what the pod is reached at. */
  listen: number
  envoyAdmin: number
  /** The app, reached only through Envoy. */
  app: number
  /** The lameduck admin listener. */
  admin: number
}

/** POD=a: Envoy 15006 (admin 15000), app 3000 (admin 54199); POD=b: each + 100; and so on. */
export function podPorts (pod: string): PodPorts {
  if (!/^[a-j]$/.test(pod)) throw new Error(`POD must be one letter a..j, got '${pod}'`)
  const n = 100 * (pod.charCodeAt(0) - 97)
  return { listen: 15_006 + n, envoyAdmin: 15_000 + n, app: 3_000 + n, admin: 54_199 + n }
}

/** `HH:MM:SS.mmm`, the prefix of every line the example prints. */
export function clock (): string {
  return new Date().toISOString().slice(11, 23)
}
