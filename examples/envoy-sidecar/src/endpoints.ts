// A Kubernetes Service's endpoints as a consumer sees them: every pod's
// readiness probed each periodMs (the kubelet's readinessProbe, through the
// sidecar as Istio rewrites it), and each change applied lagMs later (the
// EndpointSlice reaching kube-proxy or an ingress). A stand-in, for the demo.
import { request } from 'undici'

export interface EndpointsOptions {
  /** Pod addresses, 'host:port' of each sidecar's listener. */
  targets: string[]
  path: string
  periodMs: number
  lagMs: number
  onChange: (ready: string[]) => void
}

export interface Endpoints {
  /** The ready list as consumers see it now (after the lag). */
  readonly ready: readonly string[]
  close(): void
}

export function watchEndpoints (o: EndpointsOptions): Endpoints {
  let visible: string[] = []
  let probed = ''
  let closed = false
  const timers = new Set<NodeJS.Timeout>()

  async function probe (target: string): Promise<boolean> {
    try {
      // A fresh connection each time, as the kubelet's prober does.
      const res = await request(`http://${target}${o.path}`, { reset: true, headersTimeout: o.periodMs, bodyTimeout: o.periodMs })
      await res.body.dump()
      return res.statusCode === 200
    } catch {
      return false
    }
  }

  async function tick (): Promise<void> {
    const results = await Promise.all(o.targets.map(probe))
    if (closed) return
    const ready = o.targets.filter((_, i) => results[i])
    const key = ready.join(',')
    if (key !== probed) {
      probed = key
      const apply = setTimeout(() => {
        timers.delete(apply)
        visible = ready
        o.onChange(ready)
      }, o.lagMs)
      timers.add(apply)
    }
    const next = setTimeout(() => { timers.delete(next); tick().catch(() => {}) }, o.periodMs)
    timers.add(next)
  }
  tick().catch(() => {})

  return {
    get ready () { return visible },
    close () {
      closed = true
      for (const t of timers) clearTimeout(t)
      timers.clear()
    }
  }
}
