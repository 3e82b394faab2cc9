// The local Eureka server (@lameduck/devkit) with its read-only response cache
// scaled like the rest of the example. Development only: production runs a real
// Eureka. `npm run server -w @lameduck/example-eureka`, PORT (default 8761).
import { startEureka, type EurekaServerOptions } from '@lameduck/devkit'
import { clock, readSettings, type Settings } from './settings.ts'

/** The server side of the settings: shared with the smoke test. */
export function eurekaServerOptions (s: Settings): EurekaServerOptions {
  return {
    responseCacheUpdateIntervalMs: s.responseCacheUpdateIntervalMs,
    evictionIntervalTimerInMs: s.evictionIntervalMs
  }
}

if (import.meta.main) {
  const s = readSettings()
  const server = await startEureka({ ...eurekaServerOptions(s), port: Number(process.env.PORT || 8761) })
  console.log(`${clock()}  eureka: listening on ${server.url} (apps: ${server.serviceUrl})`)
  console.log(`${clock()}  eureka: read-only response cache refreshed every ${s.responseCacheUpdateIntervalMs} ms ` +
    `(production 30000 ms, SCALE=${s.scale}), eviction every ${s.evictionIntervalMs} ms. Ctrl-C stops it.`)
  const stop = async (): Promise<void> => {
    await server.close()
    console.log(`${clock()}  eureka: stopped`)
  }
  process.once('SIGINT', () => { stop().catch(console.error) })
  process.once('SIGTERM', () => { stop().catch(console.error) })
}
