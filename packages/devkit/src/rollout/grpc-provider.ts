// A gRPC provider "container" for the rollout lab (`--transport grpc`), run as a
// real child process, with the same JSON-line events as provider-app.ts.
// mode 'lameduck': a grpc-js Server under attachGrpc (registration, grpc.health.v1,
// window, GOAWAY, bounded shutdown, signals). mode 'naive' / 'sleep': what gRPC
// services do today — health SERVING once booted, register at boot, and on SIGTERM
// deregister and tryShutdown() at once.
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
    warmupMs: config.warmupMs,
    windows: config.windows,
    maxRequestMs: config.maxRequestMs,
    admin: { port: 0 },
    ...(config.ignoreSigterm ? { signals: false as const } : {}),
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

function bind (): Promise<number> {
  return new Promise((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => err ? reject(err) : resolve(port)))
}

/** The handle's admin URL once its listener is up (attachGrpc starts it with the lifecycle). */
async function adminUrl (handle: { adminUrl?: string | null, once?: (e: string, f: () => void) => unknown }): Promise<string | null> {
  for (let i = 0; i < 500 && (handle.adminUrl ?? null) === null; i++) await new Promise((resolve) => setTimeout(resolve, 10))
  return handle.adminUrl ?? null
}

/** Register once booted; on SIGTERM deregister and shut down at once (in-flight calls may finish, new ones are refused). */
function naive (port: number): void {
  const instance = { id: config.id, service: config.service, host: '127.0.0.1', port, status: 'UP' as const, metadata: {} }
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
