// Envoy's server state (api/envoy/admin/v3/server_info.proto). `/ready` prints the name
// and a newline: 200 `LIVE\n` when live, 503 with one of the others otherwise.
// DRAINING comes only from `/healthcheck/fail`; `/drain_listeners` never changes it.

export const SERVER_STATES = ['LIVE', 'DRAINING', 'PRE_INITIALIZING', 'INITIALIZING'] as const
export type EnvoyServerState = typeof SERVER_STATES[number]

/** The proto enum numbers, also the value of the `server.state` gauge. */
export const SERVER_STATE_GAUGE: Readonly<Record<EnvoyServerState, number>> = {
  LIVE: 0,
  DRAINING: 1,
  PRE_INITIALIZING: 2,
  INITIALIZING: 3
}

/** Reads a `/ready` body. Returns null for anything but one of the four states. */
export function parseReadyBody (body: unknown): EnvoyServerState | null {
  if (typeof body !== 'string') return null
  const text = body.trim()
  return (SERVER_STATES as readonly string[]).includes(text) ? text as EnvoyServerState : null
}
