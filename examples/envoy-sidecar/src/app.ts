// The pod's app container: Fastify + @lameduck/fastify with `sidecar: { envoyAdmin }`.
// Before it reports ready it waits until its Envoy is LIVE; when it goes offline it
// first waits out the window (consumers still route to it), then drains Envoy's
// inbound listeners and waits for their connections to close, then stops.
//   npm run app -w @lameduck/example-envoy-sidecar        # POD=a: :3000 behind Envoy :15006, admin :54199
// Env: POD (a), SCALE (0.2), PORT, ADMIN_PORT, ENVOY_ADMIN, ADVERTISE_PORT, LOG_LEVEL (warn).
import Fastify, { type FastifyInstance } from 'fastify'
import lameduck from '@lameduck/fastify'
import { clock, podPorts, readSettings, SERVICE, type Settings } from './settings.ts'

export interface AppOptions {
  pod: string
  /** Where the app listens: only its Envoy sends here. */
  port: number
  adminPort: number
  /** The sidecar's admin API, e.g. http://127.0.0.1:15000. */
  envoyAdmin: string
  /** The port the pod is reached at (Envoy's listener). */
  advertisePort: number
  settings: Settings
  print?: (line: string) => void
}

export async function startApp (o: AppOptions): Promise<FastifyInstance> {
  const s = o.settings
  const print = o.print ?? console.log
  const id = `${SERVICE}-${o.pod}`
  const app = Fastify({ logger: { level: process.env.LOG_LEVEL || 'warn' } })
  await app.register(lameduck, {
    service: SERVICE,
    host: '127.0.0.1',
    port: o.advertisePort,
    instanceId: id,
    // No registry: consumers find the pod through a Kubernetes Service, whose
    // endpoints lag the pod by up to 15 s (the `kubernetes` preset), × SCALE here.
    windows: { preset: 'kubernetes', scale: s.scale },
    maxRequestMs: 5_000,
    sidecar: {
      envoyAdmin: o.envoyAdmin,
      waitReady: true, // /health/ready stays 503 until Envoy's /ready says LIVE
      drain: 'listeners', // after the window: POST /drain_listeners?inboundonly&graceful
      drainTimeoutMs: s.sidecarDrainTimeoutMs,
      checkIntervalMs: s.sidecarCheckIntervalMs
    },
    admin: { host: '127.0.0.1', port: o.adminPort }
  })
  const say = (line: string): void => print(`${clock()}  ${id}  ${line}`)
  app.lameduck.on('state', (c) => say(`${c.from} → ${c.to} (${c.reason})`))
  app.lameduck.on('offline', (r) => {
    say(`offline after ${r.totalMs} ms: window ${r.windowMs} ms, sidecar drain ${r.sidecarMs} ms, ` +
      `${r.requestsWhileDraining} requests served while draining` +
      (r.problems.length > 0 ? `, problems: ${r.problems.map((p) => p.message).join('; ')}` : ''))
  })
  // GET /hello?ms=N answers after N ms (to see the in-flight wait at the end of a drain).
  app.get('/hello', async (req, reply) => {
    const ms = Number((req.query as { ms?: string }).ms ?? 0)
    if (ms > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(ms, 5_000)))
    reply.header('x-instance', id)
    return { hello: 'world', instance: id, state: app.lameduck.state }
  })
  const url = await app.listen({ host: '127.0.0.1', port: o.port })
  say(`listening on ${url} behind Envoy :${o.advertisePort} (admin ${o.envoyAdmin}), lameduck admin ${app.lameduck.adminUrl}; ` +
    `window ${app.lameduck.lifecycle.window.totalMs} ms (kubernetes × SCALE ${s.scale})`)
  return app
}

if (import.meta.main) {
  const pod = process.env.POD || 'a'
  const ports = podPorts(pod)
  await startApp({
    pod,
    port: Number(process.env.PORT ?? ports.app),
    adminPort: Number(process.env.ADMIN_PORT ?? ports.admin),
    envoyAdmin: process.env.ENVOY_ADMIN || `http://127.0.0.1:${ports.envoyAdmin}`,
    advertisePort: Number(process.env.ADVERTISE_PORT ?? ports.listen),
    settings: readSettings()
  })
}
