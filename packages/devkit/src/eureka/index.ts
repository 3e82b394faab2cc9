// Local Eureka server: startEureka() for tests, runEurekaCli() for `lameduck-devkit eureka`.
export { startEureka } from './server.ts'
export type { EurekaServer, EurekaRequestRecord } from './server.ts'
export { startEurekaCluster } from './cluster.ts'
export type { EurekaCluster, EurekaClusterOptions } from './cluster.ts'
export { runEurekaCli, EUREKA_USAGE } from './cli.ts'
export type { EurekaCliIo } from './cli.ts'
export { EUREKA_SERVER_DEFAULTS } from './options.ts'
export type { EurekaServerOptions, ResolvedEurekaServerOptions } from './options.ts'
