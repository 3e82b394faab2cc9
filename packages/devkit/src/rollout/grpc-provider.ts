// A gRPC provider "container" for the rollout lab (`--transport grpc`), run as a
// real child process, with the same JSON-line events as provider-app.ts.
// mode 'lameduck': a grpc-js Server under attachGrpc (registration, grpc.health.v1,
// window, GOAWAY, bounded shutdown, signals). mode 'naive' / 'sleep': what gRPC
// services do today — health SERVING once booted, register at boot, and on SIGTERM
// deregister and tryShutdown() at once. Behind the lab's Envoy sidecar the provider binds the
// port the pod reserved for it (the sidecar's upstream), advertises the sidecar's inbound port,
// and in mode lameduck drains its Envoy through attachGrpc's sidecar option, as provider-app.ts.
import { createServer } from 'node:net'
import * as grpc from '@grpc/grpc-js'
import { providerProcess, providerRegistry } from './provider-process.ts'
import { naiveHealth, WORK_SERVICE, type WorkReply, type WorkRequest } from './grpc-work.ts'

const { config, emit } = providerProcess()

const registry = await providerRegistry(config)
const bootedAt = Date.now() + config.bootMs
const booted = (): boolean => Date.now() >= bootedAt
let served = 0

const server = new grpc.Server()
server.addService(WORK_SERVICE, {
  work: (call: grpc.ServerUnaryCall<WorkRequest, WorkReply>, cb: grpc.sendUnaryData<WorkReply>) => {
    served++
    const ms = Number(call.request?.ms ?? 0)
    const reply = (): void => cb(null, { id: config.id, version: config.version })
    if (ms > 0) setTimeout(reply, ms)
    else reply()
  }
})

let admin: string | null = null
if (config.mode === 'lameduck') {
  const { attachGrpc } = await import('@lameduck/grpc')
  const lameduck = await attachGrpc(server, {
    service: config.service,
    host: '127.0.0.1',
    instanceId: config.id,
    registry,
    readiness: [booted],
    readinessTimeoutMs: 60_000,
    ...(config.advertisePort ? { port: config.advertisePort } : {}),
    warmupMs: config.warmupMs,
    windows: config.windows,
    maxRequestMs: config.maxRequestMs,
    admin: { port: 0 },
    ...(config.ignoreSigterm ? { signals: false as const } : {}),
    ...(config.sidecar ? { sidecar: { envoyAdmin: config.sidecar.envoyAdmin, readyTimeoutMs: 30_000, drainTimeoutMs: config.sidecar.drainTimeoutMs, unavailableWaitMs: config.sidecar.unavailableWaitMs, idleQuietMs: config.sidecar.idleQuietMs, checkIntervalMs: 100 } } : {}),
    ...(config.shutdownTimeoutMs ? { shutdownTimeoutMs: config.shutdownTimeoutMs } : {})
  })
  lameduck.on('state', (c) => emit({ event: 'state', from: c.from, to: c.to, reason: c.reason }))
  lameduck.on('offline', (r) => emit({ event: 'offline', report: r }))
  const port = await bind()
  admin = await adminUrl(lameduck)
  emit({ event: 'listening', url: `grpc://127.0.0.1:${port}`, port, admin })
} else {
  naiveHealth(server, booted)
  const port = await bind()
  emit({ event: 'listening', url: `grpc://127.0.0.1:${port}`, port, admin })
  naive(port)
}

if (config.ignoreSigterm) process.on('SIGTERM', () => emit({ event: 'ignored', signal: 'SIGTERM' }))

async function bind (): Promise<number> {
  const address = `127.0.0.1:${await reservedPort()}`
  return new Promise((resolve, reject) => server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (err, port) => err ? reject(err) : resolve(port)))
}

/**
 * The port the pod reserved (the listener inherited at config.listenFd, the sidecar's upstream), or 0.
 * grpc-js binds its own sockets and takes no fd, so the inherited socket is closed and its port bound
 * again right after: for that moment a connection to it is refused, before the app is ready.
 */
async function reservedPort (): Promise<number> {
  if (config.listenFd === undefined) return 0
  const inherited = createServer()
  await new Promise<void>((resolve, reject) => {
    inherited.once('error', reject)
    inherited.listen({ fd: config.listenFd }, () => { inherited.off('error', reject); resolve() })
  })
  const { port } = inherited.address() as { port: number }
  await new Promise<void>((resolve) => inherited.close(() => resolve()))
  return port
}

/** The handle's admin URL once its listener is up (attachGrpc starts it with the lifecycle). */
async function adminUrl (handle: { adminUrl?: string | null, once?: (e: string, f: () => void) => unknown }): Promise<string | null> {
  for (let i = 0; i < 500 && (handle.adminUrl ?? null) === null; i++) await new Promise((resolve) => setTimeout(resolve, 10))
  return handle.adminUrl ?? null
}

/** Register once booted; on SIGTERM deregister and shut down at once (in-flight calls may finish, new ones are refused). */
function naive (port: number): void {
  const instance = { id: config.id, service: config.service, host: '127.0.0.1', port: config.advertisePort ?? port, status: 'UP' as const, metadata: {} }
  const registerWhenBooted = async (): Promise<void> => {
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, bootedAt - Date.now())))
    if (registry) await registry.register(instance)
    emit({ event: 'state', to: 'serving' })
  }
  registerWhenBooted().catch((err: Error) => emit({ event: 'error', message: err.message }))
  if (config.ignoreSigterm) return
  process.once('SIGTERM', () => {
    emit({ event: 'state', to: 'closing', reason: 'SIGTERM' })
    const stop = async (): Promise<void> => {
      if (registry) { await registry.deregister(instance).catch(() => {}); await registry.close().catch(() => {}) }
      await new Promise<void>((resolve) => server.tryShutdown(() => resolve()))
    }
    stop().finally(() => { emit({ event: 'exit', served }); process.exit(0) })
  })
}
