import type { Lifecycle } from '@lameduck/core'

export type ProbeKind = 'ready' | 'live'
export interface ProbeAnswer { statusCode: number, body: Record<string, unknown> }

/**
 * The readiness and liveness answers, for the engine's raw routes and for a
 * framework serving the routes itself. Ready: 200 only while serving. Live:
 * 503 once startup failed (the kubelet restarts the container).
 */
export function probeAnswer (lifecycle: Lifecycle, kind: ProbeKind, broken: Error | null): ProbeAnswer {
  const state = lifecycle.state
  if (kind === 'ready') {
    return state === 'serving' ? { statusCode: 200, body: { state, warming: lifecycle.warming } } : { statusCode: 503, body: { state } }
  }
  if (broken !== null) return { statusCode: 503, body: { state, error: broken.message } }
  return { statusCode: 200, body: { state } }
}
