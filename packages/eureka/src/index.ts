// @lameduck/eureka: lameduck Registry and Discovery over eureka-js-client.
export { eurekaRegistry, eurekaDiscovery } from './registry.ts'
export type { EurekaRegistry, EurekaDiscovery } from './registry.ts'
export { eurekaWindows, BALANCER_REFRESH_MS } from './windows.ts'
export type { EurekaWindowOptions, EurekaBalancer } from './windows.ts'
export type { EurekaRegistryOptions, EurekaDiscoveryOptions, EurekaClientOptions, OfflineMode } from './options.ts'
export type { EurekaInstanceJson } from './client.ts'
