// The local Nacos naming server (@lameduck/devkit): v1 HTTP API, UDP push and
// cacheMillis polling, scaled like the rest of the example. It prints every
// registration change and every push, so you can see which path told the
// consumer. Development only: production runs a real Nacos.
//   npm run server -w @lameduck/example-nacos              # 127.0.0.1:8848, push on
//   PUSH=off npm run server -w @lameduck/example-nacos     # consumers learn only by polling
import { startNacos, type NacosServerOptions } from '@lameduck/devkit'
import { clock, readSettings, type Settings } from './settings.ts'

/** The server side of the settings: shared with the smoke test. */
export function nacosServerOptions (s: Settings, push = true): NacosServerOptions {
  return { cacheMillis: s.cacheMillis, pushDelayMs: s.pushDelayMs, push }
}

if (import.meta.main) {
  const s = readSettings()
  const push = !['off', '0', 'false'].includes(process.env.PUSH ?? '')
  const server = await startNacos({ ...nacosServerOptions(s, push), port: Number(process.env.PORT || 8848) })
  console.log(`${clock()}  nacos: listening on ${server.url} (serverList ${server.serverList})`)
  console.log(`${clock()}  nacos: cacheMillis ${s.cacheMillis} ms (production 10000), ` +
    `${push ? `UDP push ${s.pushDelayMs} ms after a change (production 500)` : 'UDP push off: clients poll'}, SCALE=${s.scale}. Ctrl-C stops it.`)
  const name = (grouped: string): string => grouped.split('@@').at(-1)!
  server.events.on('change', (c) => {
    if (c.reason !== 'update') console.log(`${clock()}  nacos: ${c.reason} ${name(c.service)} ${c.ip}:${c.port}`)
  })
  server.events.on('push', (p) => {
    console.log(`${clock()}  nacos: pushed ${name(p.subscriber.name)} (${p.hosts} host${p.hosts === 1 ? '' : 's'}) to ${p.subscriber.address}:${p.subscriber.port}`)
  })
  const stop = async (): Promise<void> => {
    await server.close()
    console.log(`${clock()}  nacos: stopped`)
  }
  process.once('SIGINT', () => { stop().catch(console.error) })
  process.once('SIGTERM', () => { stop().catch(console.error) })
}
