// The servers of second-server.ts: the node:http hello world, with the OTel SDK ('otel'), a second
// idle node:http server ('second'), attach() ('attach', 'noadmin' without its admin listener).
import { createServer } from 'node:http'
import { memoryRegistry, silentLogger } from '@lameduck/core'
import { attach } from '@lameduck/node'
import { installOtelSdk } from './otel-sdk.ts'

const mode = process.argv[2]!
const BODY = JSON.stringify({ hello: 'world' })
const server = createServer((_req, res) => { res.setHeader('content-type', 'application/json'); res.end(BODY) })
if (mode.includes('otel')) installOtelSdk()
if (mode.includes('second')) {
  const second = createServer({ requestTimeout: 0 }, (_req, res) => { res.end('x') })
  await new Promise<void>((resolve) => second.listen(0, '127.0.0.1', resolve))
}
if (mode.includes('attach')) {
  await attach(server, { service: 'bench', host: '127.0.0.1', registry: memoryRegistry(), windows: 'none', admin: mode.includes('noadmin') ? false : { port: 0 }, signals: false, logger: silentLogger })
}
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
process.send!({ port: (server.address() as { port: number }).port })
process.on('disconnect', () => { process.exit(0) })
