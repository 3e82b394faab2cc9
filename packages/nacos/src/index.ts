// @lameduck/nacos: lameduck Registry and Discovery over the `nacos` naming client,
// with workarounds for its traps (see README).
export { nacosRegistry, nacosDiscovery } from './registry.ts'
export type { NacosRegistry, NacosDiscovery } from './registry.ts'
export type { NacosRegistryOptions } from './options.ts'
export { nacosWindows } from './windows.ts'
export { NacosProtocolError } from './errors.ts'
export type { NacosWindowOptions } from './windows.ts'
export type { NamingClient, SdkInstance as NacosSdkInstance, SdkHost as NacosSdkHost } from './sdk-types.ts'
