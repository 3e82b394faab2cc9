// The Orders service from proto/orders.proto (loaded at run time with @grpc/proto-loader),
// and the settings the Eureka server, the providers and the consumer share.
import { fileURLToPath } from 'node:url'
import * as grpc from '@grpc/grpc-js'
import { loadSync } from '@grpc/proto-loader'

export const SERVICE = 'orders'
const PROTO = fileURLToPath(new URL('../proto/orders.proto', import.meta.url))

export interface GetOrderRequest { id: string, delayMs: number }
export interface Order { id: string, instance: string }

const definition = loadSync(PROTO, { keepCase: false, longs: Number, defaults: true })
const shop = (grpc.loadPackageDefinition(definition) as unknown as { shop: { Orders: grpc.ServiceClientConstructor } }).shop

export const OrdersService = shop.Orders.service
export type OrdersChannel = grpc.Client & {
  get(req: GetOrderRequest, options: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: Order) => void): grpc.ClientUnaryCall
}
export const OrdersClient = shop.Orders as unknown as new (target: string, creds: grpc.ChannelCredentials, options?: grpc.ChannelOptions) => OrdersChannel

/** Production intervals × SCALE (default 0.1): Eureka's read-only cache and the consumers' fetch, 30 s each. */
export function settings (env: NodeJS.ProcessEnv = process.env): { scale: number, eurekaUrl: string, cacheMs: number, fetchMs: number, heartbeatMs: number, marginMs: number } {
  const scale = env.SCALE === undefined || env.SCALE === '' ? 0.1 : Number(env.SCALE)
  if (!Number.isFinite(scale) || scale <= 0) throw new Error(`SCALE must be a positive number, got '${env.SCALE}'`)
  const marginMs = Number(env.MARGIN_MS || 0)
  return {
    scale,
    eurekaUrl: env.EUREKA_URL || 'http://127.0.0.1:8761/eureka',
    cacheMs: Math.round(30_000 * scale),
    fetchMs: Math.round(30_000 * scale),
    heartbeatMs: Math.max(200, Math.round(30_000 * scale)),
    marginMs
  }
}

export const clock = (): string => new Date().toISOString().slice(11, 23)
