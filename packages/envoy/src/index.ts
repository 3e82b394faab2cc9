// @lameduck/envoy: Envoy admin API client over undici (readiness, drain, health-check
// fail, active connections) and the sidecar steps the lameduck lifecycle runs.
export { EnvoyAdmin, envoyAdmin, drainListenersPath } from './admin-client.ts'
export type { EnvoyAdminOptions, ConnectionCountOptions, DrainListenersOptions, WaitReadyOptions, AdminResponse, ServerInfo } from './admin-client.ts'
export type { WaitForConnectionsOptions, WaitForConnectionsResult } from './wait-for-connections.ts'
export { envoySidecar } from './sidecar.ts'
export { drainEnvoy, CONTOUR_BACKOFF } from './drain-envoy.ts'
export type { DrainEnvoyOptions, DrainEnvoyResult, DrainProgress, DrainStrategy, DrainCall } from './drain-envoy.ts'
export type { EnvoySidecar, EnvoySidecarOptions, ResolvedEnvoySidecarOptions, SidecarDrain } from './sidecar.ts'
export { EnvoyAdminError, ENVOY_ERROR_CODES } from './errors.ts'
export type { EnvoyErrorCode, EnvoyAdminErrorDetails } from './errors.ts'
export { SERVER_STATES, SERVER_STATE_GAUGE, parseReadyBody } from './server-state.ts'
export type { EnvoyServerState } from './server-state.ts'
export {
  countIstio, countContour, countJson, countConnections, isCountedListenerStat,
  CONNECTION_STATS_PATHS, DEFAULT_EXCLUDED_PORTS, ISTIO_INBOUND_LISTENERS, CONTOUR_EXCLUDED_PREFIXES, CONTOUR_STAT
} from './count-connections.ts'
export type { ConnectionCount, ConnectionCountMethod, ListenerCountOptions, ContourCountOptions } from './count-connections.ts'
export { countRequests, REQUEST_STATS_PATH } from './count-requests.ts'
export type { RequestCount, RequestCountOptions } from './count-requests.ts'
export { parseStatsText } from './parse-stats-text.ts'
export type { TextStat } from './parse-stats-text.ts'
export { parseStatsJson } from './parse-stats-json.ts'
export type { JsonStat } from './parse-stats-json.ts'
export { parsePrometheus } from './parse-prometheus.ts'
export type { PromSample, PromScrape } from './parse-prometheus.ts'
export { DEFAULT_ADMIN_URL } from './options.ts'
