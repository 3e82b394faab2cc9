// The bench's server process: a grpc-js Server with one unary echo method
// (Buffers in and out, no serialization cost), bare or under attachGrpc(). It
// answers the parent's questions over IPC: its CPU time so far, and the heap it
// allocates between 'heap-start' and 'heap-stop'.
import { Session } from 'node:inspector/promises'
import * as grpc from '@grpc/grpc-js'
import { memoryRegistry, silentLogger } from '@lameduck/core'

export type BenchMode = 'bare' | 'attach'

const identity = (b: Buffer): Buffer => b

export const ECHO_SERVICE = {
  echo: { path: '/bench.Echo/Echo', requestStream: false, responseStream: false, requestSerialize: identity, requestDeserialize: identity, responseSerialize: identity, responseDeserialize: identity }
} satisfies grpc.ServiceDefinition

export async function serveBench (mode: BenchMode): Promise<void> {
  const server = new grpc.Server()
  server.addService(ECHO_SERVICE, { echo: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => cb(null, call.request) })
  if (mode === 'attach') {
    const { attachGrpc } = await import('@lameduck/grpc')
    await attachGrpc(server, { service: 'bench', host: '127.0.0.1', registry: memoryRegistry(), windows: 'none', admin: { port: 0 }, signals: false, logger: silentLogger })
  }
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => err ? reject(err) : resolve(p)))
  let session: Session | null = null
  process.on('message', (m) => {
    if (m === 'cpu') { const u = process.cpuUsage(); process.send!({ cpuMicros: u.user + u.system }); return }
    if (m === 'heap-start') {
      session = new Session()
      session.connect()
      session.post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true }).then(() => process.send!({ started: true }), (err) => { throw err })
      return
    }
    if (m === 'heap-stop' && session !== null) {
      const s = session
      s.post('HeapProfiler.stopSampling').then(({ profile }) => {
        s.disconnect()
        let bytes = 0
        const walk = (node: typeof profile.head): void => { bytes += node.selfSize; for (const child of node.children) walk(child) }
        walk(profile.head)
        process.send!({ bytes })
      }, (err) => { throw err })
    }
  })
  process.send!({ port })
  process.on('disconnect', () => {
    server.forceShutdown()
    setTimeout(() => process.exit(0), 500).unref()
  })
}
