// Local Envoy sidecar: HTTP/1.1 proxy + Envoy admin API. startEnvoy() for tests,
// runEnvoyCli() for `lameduck-devkit envoy`.
export { startEnvoy } from './local-envoy.ts'
export type { LocalEnvoy, AdminLogEntry } from './local-envoy.ts'
export type { EnvoyOptions, ResolvedEnvoyOptions } from './options.ts'
export type { DrainStrategy, TrafficDirection } from './drain-manager.ts'
export { runEnvoyCli, ENVOY_CLI_HELP } from './cli.ts'
export type { EnvoyCliIo } from './cli.ts'
export { terminateLikeIstio, istioActiveConnections } from './istio-agent.ts'
export type { IstioTerminateOptions, IstioTerminateResult, IstioTerminateOutcome } from './istio-agent.ts'
export type { AccessLogEntry } from './access-log.ts'
export type { RetryOn } from './retry-policy.ts'
