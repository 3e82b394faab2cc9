// @lameduck/devkit: local stand-ins for Eureka, Nacos and Envoy, and the
// rolling-deploy simulator. For development and tests only.
export * from './eureka/index.ts'
export * from './nacos/index.ts'
export * from './envoy/index.ts'
export * from './rollout/index.ts'
