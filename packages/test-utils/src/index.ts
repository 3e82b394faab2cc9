export { until } from './until.ts'
export type { UntilOptions } from './until.ts'
export { listen, close, reportedPort } from './ports.ts'
export { prng, Random, forAll, forAllAsync, seedFromEnv } from './prng.ts'
