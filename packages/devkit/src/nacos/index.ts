// A local, protocol-faithful Nacos naming server (v1 HTTP API + UDP push) for
// development and tests. Production uses a real Nacos.
export { startNacos } from './server.ts'
export { startNacosCluster } from './cluster.ts'
export type { NacosCluster, NacosClusterOptions } from './cluster.ts'
export type { NacosServer, NacosServerEvents, ChangeEvent, BeatEvent, RequestEvent, InstanceView } from './server.ts'
export { runNacosCli, parseNacosArgs, NACOS_USAGE } from './cli.ts'
export type { CliIo as NacosCliIo } from './cli.ts'
export type { NacosServerOptions } from './options.ts'
export type { Subscriber as NacosSubscriber, PushRecord as NacosPushRecord } from './push-service.ts'
export type { ServiceInfoJson as NacosServiceInfo, HostJson as NacosHost } from './service-info.ts'
