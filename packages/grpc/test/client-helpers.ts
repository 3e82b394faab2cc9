// Real grpc-js servers on 127.0.0.1 for the consumer-side tests: a JSON unary
// service (no .proto needed) that counts calls, holds them `ms` long, and can
// answer with lameduck's state in the trailers the way attachGrpc does.
import * as grpc from '@grpc/grpc-js'

export interface WorkRequest { ms?: number }
export interface WorkReply { server: string }

const json = {
  serialize: (v: unknown): Buffer => Buffer.from(JSON.stringify(v)),
  deserialize: (b: Buffer): any => JSON.parse(b.toString('utf8'))
}

export const WORK_SERVICE: grpc.ServiceDefinition = {
  work: {
    path: '/lab.Work/Work',
    requestStream: false,
    responseStream: false,
    requestSerialize: json.serialize,
    requestDeserialize: json.deserialize,
    responseSerialize: json.serialize,
    responseDeserialize: json.deserialize
  }
}

export const WorkClient = grpc.makeGenericClientConstructor(WORK_SERVICE, 'Work') as unknown as new (target: string, creds: grpc.ChannelCredentials, options?: grpc.ChannelOptions) => grpc.Client & {
  work(req: WorkRequest, md: grpc.Metadata, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: WorkReply) => void): grpc.ClientUnaryCall
}

export interface TestServer {
  name: string
  port: number
  server: grpc.Server
  calls: number
  inFlight: number
  consumers: Set<string>
  /** When set, every answer carries x-lameduck-state: <state> in its trailers. */
  state: string | null
  forceShutdown(): void
}

export async function startServer (name: string): Promise<TestServer> {
  const server = new grpc.Server()
  const s: TestServer = {
    name,
    port: 0,
    server,
    calls: 0,
    inFlight: 0,
    consumers: new Set(),
    state: null,
    forceShutdown: () => server.forceShutdown()
  }
  server.addService(WORK_SERVICE, {
    work: (call: grpc.ServerUnaryCall<WorkRequest, WorkReply>, cb: grpc.sendUnaryData<WorkReply>) => {
      s.calls++
      s.inFlight++
      for (const v of call.metadata.get('x-lameduck-consumer')) s.consumers.add(String(v))
      const ms = call.request.ms ?? 0
      setTimeout(() => {
        s.inFlight--
        const trailers = new grpc.Metadata()
        if (s.state !== null) trailers.set('x-lameduck-state', s.state)
        cb(null, { server: name }, trailers)
      }, ms)
    }
  })
  s.port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => err ? reject(err) : resolve(port)))
  return s
}

export function call (client: InstanceType<typeof WorkClient>, ms = 0): Promise<WorkReply> {
  return new Promise((resolve, reject) => {
    client.work({ ms }, new grpc.Metadata(), { deadline: Date.now() + 20_000 }, (err, res) => err ? reject(err) : resolve(res!))
  })
}

/** Open-loop-ish load: `concurrency` callers in a loop until stopped; counts outcomes. */
export function load (client: InstanceType<typeof WorkClient>, concurrency: number, ms: number): { ok: number, failed: number, errors: string[], stop(): Promise<void> } {
  const state = { running: true, ok: 0, failed: 0, errors: [] as string[] }
  const loops = Array.from({ length: concurrency }, async () => {
    while (state.running) {
      try {
        await call(client, ms)
        state.ok++
      } catch (err) {
        state.failed++
        if (state.errors.length < 10) state.errors.push(`${(err as grpc.ServiceError).code}: ${(err as Error).message}`)
        // A failing channel answers at once: do not spin.
        await new Promise((resolve) => setImmediate(resolve))
      }
    }
  })
  return {
    get ok () { return state.ok },
    get failed () { return state.failed },
    get errors () { return state.errors },
    async stop () { state.running = false; await Promise.all(loops) }
  }
}

export function instance (s: TestServer, metadata: Record<string, string> = {}): { id: string, service: string, host: string, port: number, status: 'UP', metadata: Record<string, string> } {
  return { id: s.name, service: 'orders', host: '127.0.0.1', port: s.port, status: 'UP', metadata }
}
