// A one-command tour of the offline sequence on the embedded memory registry:
// starts the service, sends steady traffic, takes it offline, and prints what
// happened.   npm run demo -w @lameduck/example-basic
// (A rolling update of several pods is the devkit's demo: `npm start` at the root.)
import { request } from 'undici'
import { buildServer } from './server.ts'

const { app, registry } = await buildServer({ port: 0, adminPort: 0, windowMs: 2_000 })
app.log.level = 'warn'
const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
const admin = app.lameduck.adminUrl!
const t0 = Date.now()
const at = () => `${String(Date.now() - t0).padStart(5)} ms`
app.lameduck.on('state', (c) => console.log(`${at()}  ${c.from} → ${c.to}  (${c.reason})`))

let ok = 0
let failed = 0
let marked = 0
const run = { stop: false }
const traffic = (async () => {
  while (!run.stop) {
    try {
      const res = await request(`${url}/hello`)
      await res.body.dump()
      if (res.statusCode === 200) ok++; else failed++
      if (res.headers['x-lameduck-state'] === 'draining') marked++
    } catch { failed++ }
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
})()

while (app.lameduck.state !== 'serving') await new Promise((resolve) => setTimeout(resolve, 50))
console.log(`${at()}  registered: ${JSON.stringify(registry.registered('hello')[0]?.metadata)}`)
await new Promise((resolve) => setTimeout(resolve, 500))
console.log(`${at()}  POST ${admin}/offline?wait=true`)
const res = await request(`${admin}/offline?wait=true`, { method: 'POST' })
const { report } = await res.body.json() as { report: Record<string, unknown> }
run.stop = true
await traffic
console.log(`${at()}  offline report: ${JSON.stringify(report)}`)
console.log(`\nrequests ok: ${ok}, failed: ${failed}, answered with x-lameduck-state: draining: ${marked}`)
await app.close()
