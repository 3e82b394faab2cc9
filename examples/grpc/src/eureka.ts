// The devkit's Eureka server with its read-only response cache at 30 s × SCALE.
//   npm run eureka -w @lameduck/example-grpc      # http://127.0.0.1:8761/eureka
import { startEureka } from '@lameduck/devkit'
import { settings } from './orders.ts'

const s = settings()
const eureka = await startEureka({ port: Number(process.env.EUREKA_PORT ?? 8761), responseCacheUpdateIntervalMs: s.cacheMs })
console.log(`eureka on ${eureka.url} (read-only cache ${s.cacheMs} ms)`)
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => { eureka.close().then(() => process.exit(0), () => process.exit(1)) })
