import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js'
import { LameduckError } from '@lameduck/core'

// grpc.health.v1 (grpc/grpc doc/health-checking.md) without a protobuf runtime: two
// one-field messages, encoded by hand, so the package needs no proto loader.
//   message HealthCheckRequest  { string service = 1; }
//   message HealthCheckResponse { ServingStatus status = 1; }

/** The health service's full name, as Kubernetes' gRPC probes and health-checking clients call it. */
export const HEALTH_SERVICE = 'grpc.health.v1.Health'

/** HealthCheckResponse.ServingStatus. */
export const ServingStatus = { UNKNOWN: 0, SERVING: 1, NOT_SERVING: 2, SERVICE_UNKNOWN: 3 } as const
/** One of ServingStatus's values. */
export type ServingStatusValue = typeof ServingStatus[keyof typeof ServingStatus]

export interface HealthCheckRequest { service: string }
export interface HealthCheckResponse { status: ServingStatusValue }

/** A message that is not a HealthCheckRequest/Response (truncated, a bad varint, a wrong wire type). */
export class HealthCodecError extends LameduckError {
  constructor (message: string) {
    super('LAMEDUCK_ERR_GRPC_HEALTH_MESSAGE', `grpc.health.v1: ${message}`)
    this.name = 'HealthCodecError'
  }
}

/** Reads a varint at `at`; returns [value, next offset]. At most 5 bytes: every field here fits 32 bits. */
function varint (buf: Buffer, at: number): [number, number] {
  let value = 0
  for (let i = 0; i < 10; i++) {
    if (at + i >= buf.length) throw new HealthCodecError('truncated varint')
    const byte = buf[at + i]!
    if (i < 5) value += (byte & 0x7f) * 2 ** (7 * i)
    if ((byte & 0x80) === 0) return [value, at + i + 1]
  }
  throw new HealthCodecError('varint longer than 10 bytes')
}

function writeVarint (value: number): number[] {
  const out: number[] = []
  let v = value
  while (v >= 0x80) { out.push((v % 0x80) | 0x80); v = Math.floor(v / 0x80) }
  out.push(v)
  return out
}

/** Walks the fields of a message: (field number, wire type, varint value or bytes). Unknown fields are skipped. */
function fields (buf: Buffer, visit: (field: number, value: number | Buffer) => void): void {
  let at = 0
  while (at < buf.length) {
    const [key, next] = varint(buf, at)
    at = next
    const field = Math.floor(key / 8)
    const wire = key % 8
    if (wire === 0) { const [v, n] = varint(buf, at); at = n; visit(field, v); continue }
    if (wire === 2) {
      const [len, n] = varint(buf, at)
      if (n + len > buf.length) throw new HealthCodecError('length past the end of the message')
      visit(field, buf.subarray(n, n + len))
      at = n + len
      continue
    }
    if (wire === 1) { at += 8 } else if (wire === 5) { at += 4 } else throw new HealthCodecError(`unsupported wire type ${wire}`)
    if (at > buf.length) throw new HealthCodecError('fixed field past the end of the message')
  }
}

export function decodeRequest (buf: Buffer): HealthCheckRequest {
  let service = ''
  fields(buf, (field, value) => { if (field === 1 && Buffer.isBuffer(value)) service = value.toString('utf8') })
  return { service }
}

export function encodeRequest (req: HealthCheckRequest): Buffer {
  const name = Buffer.from(req.service ?? '', 'utf8')
  return name.length === 0 ? Buffer.alloc(0) : Buffer.concat([Buffer.from([0x0a, ...writeVarint(name.length)]), name])
}

export function decodeResponse (buf: Buffer): HealthCheckResponse {
  let status = 0
  fields(buf, (field, value) => { if (field === 1 && typeof value === 'number') status = value })
  return { status: status as ServingStatusValue }
}

export function encodeResponse (res: HealthCheckResponse): Buffer {
  return res.status === 0 ? Buffer.alloc(0) : Buffer.from([0x08, ...writeVarint(res.status)])
}

function method (name: 'Check' | 'Watch'): MethodDefinition<HealthCheckRequest, HealthCheckResponse> {
  return {
    path: `/${HEALTH_SERVICE}/${name}`,
    requestStream: false,
    responseStream: name === 'Watch',
    requestSerialize: encodeRequest,
    requestDeserialize: decodeRequest,
    responseSerialize: encodeResponse,
    responseDeserialize: decodeResponse,
    originalName: name.toLowerCase()
  }
}

/**
 * The grpc.health.v1.Health service definition, for `server.addService()` and for
 * clients (`grpc.makeGenericClientConstructor(healthServiceDefinition, 'Health')`).
 */
export const healthServiceDefinition: ServiceDefinition = { Check: method('Check'), Watch: method('Watch') }
