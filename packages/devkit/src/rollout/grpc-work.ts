// The lab's gRPC service: one unary method, `lab.Work/Work` (JSON messages, so
// no .proto), that answers after `ms` with the instance id; and a kubelet-style
// gRPC probe (grpc.health.v1.Health/Check, the message encoded by hand).
import * as grpc from '@grpc/grpc-js'

export interface WorkRequest { ms: number }
export interface WorkReply { id: string, version: string }

const json = {
  serialize: (v: unknown): Buffer => Buffer.from(JSON.stringify(v)),
  deserialize: (b: Buffer): any => JSON.parse(b.toString('utf8'))
}

export const WORK_SERVICE = {
  work: {
    path: '/lab.Work/Work',
    requestStream: false,
    responseStream: false,
    requestSerialize: json.serialize,
    requestDeserialize: json.deserialize,
    responseSerialize: json.serialize,
    responseDeserialize: json.deserialize
  }
} satisfies grpc.ServiceDefinition

export type WorkChannel = grpc.Client & {
  work(req: WorkRequest, md: grpc.Metadata, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: WorkReply) => void): grpc.ClientUnaryCall
}
export const WorkClient = grpc.makeGenericClientConstructor(WORK_SERVICE, 'Work') as unknown as new (target: string, creds: grpc.ChannelCredentials, options?: grpc.ChannelOptions) => WorkChannel

/** grpc.health.v1: HealthCheckRequest { string service = 1 } and HealthCheckResponse { ServingStatus status = 1 } (SERVING = 1). */
const HEALTH = {
  check: {
    path: '/grpc.health.v1.Health/Check',
    requestStream: false,
    responseStream: false,
    requestSerialize: ({ service }: { service: string }): Buffer => service === '' ? Buffer.alloc(0) : Buffer.concat([Buffer.from([0x0a, Buffer.byteLength(service)]), Buffer.from(service)]),
    // An object, never '': grpc-js takes a falsy request for "no request message".
    requestDeserialize: (b: Buffer): { service: string } => ({ service: b.length > 2 ? b.subarray(2).toString('utf8') : '' }),
    responseSerialize: (status: number): Buffer => Buffer.from([0x08, status]),
    responseDeserialize: (b: Buffer): number => b.length >= 2 && b[0] === 0x08 ? b[1]! : 0
  }
} satisfies grpc.ServiceDefinition

type HealthChannel = grpc.Client & { check(req: { service: string }, md: grpc.Metadata, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, status?: number) => void): void }
const HealthClient = grpc.makeGenericClientConstructor(HEALTH, 'Health') as unknown as new (target: string, creds: grpc.ChannelCredentials, options?: grpc.ChannelOptions) => HealthChannel

/** The health service a naive provider serves: SERVING once booted, whatever happens after (as grpc-health-check apps do). */
export function naiveHealth (server: grpc.Server, serving: () => boolean): void {
  server.addService(HEALTH, {
    check: (_call: grpc.ServerUnaryCall<{ service: string }, number>, cb: grpc.sendUnaryData<number>) => cb(null, serving() ? 1 : 2)
  })
}

/**
 * One kubelet gRPC probe (`grpc: { port }`): Check with service '' on a fresh
 * connection, bounded by `timeoutMs`; true only for SERVING.
 */
export function grpcProbe (port: number, timeoutMs: number): Promise<boolean> {
  const client = new HealthClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 })
  return new Promise<boolean>((resolve) => {
    client.check({ service: '' }, new grpc.Metadata(), { deadline: Date.now() + timeoutMs }, (err, status) => resolve(err === null && status === 1))
  }).finally(() => client.close())
}
