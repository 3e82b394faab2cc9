// attachGrpc() at the edge: when it registers (bound, readiness passed, the port named), a
// server never bound (a clear error, no hang), a second attach, options a gRPC server cannot
// take, a server that already has a health service, and what close() leaves behind.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import * as grpc from '@grpc/grpc-js'
import { InvalidOptionError, memoryRegistry, silentLogger } from '@lameduck/core'
import { attachGrpc, healthServiceDefinition, NotBoundError } from '@lameduck/grpc'
import { bind, captureLogger, Echo, echoImplementation, serverCredentials, startGrpc, unary, until } from './helpers.ts'

const base = { service: 'echo', host: '127.0.0.1', windows: 'none', signals: false, admin: false, terminationMessage: false, logger: silentLogger } as const

function echoServer (): grpc.Server {
  const server = new grpc.Server()
  server.addService(Echo.service, echoImplementation('a'))
  return server
}

test('registers only once the server is bound and readiness passed, with the bound port', async (t) => {
  const server = echoServer()
  t.after(() => { server.forceShutdown() })
  const registry = memoryRegistry()
  let ready = false
  const lameduck = await attachGrpc(server, { ...base, registry, readiness: [() => ready] })
  t.after(() => lameduck.close())
  // Not bound: nothing to register, nothing to take offline.
  await new Promise((resolve) => setImmediate(resolve))
  assert.equal(lameduck.state, 'starting')
  await assert.rejects(lameduck.offline(), { code: 'LAMEDUCK_ERR_INVALID_TRANSITION' })
  const port = await bind(server, '127.0.0.1:0', serverCredentials('plaintext'))
  await until(() => lameduck.state === 'waiting', 'waiting for readiness once bound')
  assert.deepEqual(registry.registered('echo'), [])
  ready = true
  await until(() => lameduck.state === 'serving', 'serving')
  const [instance] = registry.registered('echo')
  assert.equal(instance?.port, port)
  assert.equal(instance?.id, `127.0.0.1:echo:${port}`)
})

test('bindAddress: waits for the port it names, and advertises it', async (t) => {
  const server = echoServer()
  t.after(() => { server.forceShutdown() })
  const registry = memoryRegistry()
  const first = await bind(server, '127.0.0.1:0', serverCredentials('plaintext'))
  const lameduck = await attachGrpc(server, { ...base, registry, bindAddress: 'localhost:0' })
  t.after(() => lameduck.close())
  await new Promise((resolve) => setTimeout(resolve, 100)) // several bind polls: the named port is not there yet
  assert.equal(lameduck.state, 'starting')
  const named = await bind(server, 'localhost:0', serverCredentials('plaintext'))
  assert.notEqual(named, first)
  await until(() => lameduck.state === 'serving', 'serving')
  assert.equal(registry.registered('echo')[0]?.port, named)
})

test('a server never bound: NotBoundError after bindTimeoutMs, in the log and /status, not a hang; shutdown() still ends', async (t) => {
  const server = echoServer()
  const log = captureLogger()
  const lameduck = await attachGrpc(server, { ...base, logger: log, bindTimeoutMs: 200 })
  t.after(() => lameduck.close())
  await until(() => lameduck.status().broken !== null, 'the startup failure')
  assert.match(lameduck.status().broken!, /the gRPC server bound no port within 200 ms .*bindAsync/)
  const line = log.lines.find((l) => l.level === 'error')
  assert.ok(line)
  // The log gets a redacted copy: the name and the code of NotBoundError.
  const err = (line.obj as { err: NotBoundError }).err
  assert.equal(err.name, 'NotBoundError')
  assert.equal(err.code, 'LAMEDUCK_ERR_GRPC_NOT_BOUND')
  assert.equal(new NotBoundError(1, undefined, []).code, err.code)
  assert.equal(lameduck.probe('live').statusCode, 503)
  await lameduck.shutdown()
  assert.equal(lameduck.state, 'stopped')
})

test('a second attachGrpc on one server fails clearly; after close() it may attach again', async (t) => {
  const server = echoServer()
  t.after(() => { server.forceShutdown() })
  const first = await attachGrpc(server, base)
  await assert.rejects(attachGrpc(server, base), (err: InvalidOptionError) => {
    assert.ok(err instanceof InvalidOptionError)
    assert.equal(err.code, 'LAMEDUCK_ERR_INVALID_OPTION')
    assert.equal(err.option, 'server')
    assert.match(err.message, /already attached to this gRPC server/)
    return true
  })
  await first.close()
  const second = await attachGrpc(server, base)
  await second.close()
})

test('close() detaches: the interceptor, the health service and the held methods are gone', async (t) => {
  const s = await startGrpc()
  t.after(() => s.stop())
  await until(() => s.lameduck!.state === 'serving', 'serving')
  await s.lameduck!.close()
  const internals = s.server as unknown as { interceptors: unknown[], handlers: Map<string, unknown> }
  assert.equal(internals.interceptors.length, 0)
  assert.equal(internals.handlers.has('/grpc.health.v1.Health/Check'), false)
  assert.equal(Object.hasOwn(s.server, 'tryShutdown'), false)
  assert.equal(Object.hasOwn(s.server, 'forceShutdown'), false)
  assert.equal(Object.hasOwn(s.server, 'bindAsync'), false)
  const h2 = [...(s.server as unknown as { http2Servers: Map<import('node:events').EventEmitter, unknown> }).http2Servers.keys()]
  assert.ok(h2.every((server) => server.listenerCount('stream') === 1), 'only grpc-js\'s own stream listener is left')
  assert.equal((await unary(s.client(), { text: 'still here' })).res.text, 'still here')
})

test('options a gRPC server cannot take, and what is not a grpc-js Server, are refused at the edge', async () => {
  const server = echoServer()
  const refused: Array<[Record<string, unknown>, string]> = [
    [{ routes: { ready: '/r' } }, 'routes'],
    [{ serveRoutes: true }, 'serveRoutes'],
    [{ closeApp: async () => {} }, 'closeApp'],
    [{ metrics: { listener: 'app' } }, 'metrics.listener'],
    [{ bindAddress: '' }, 'bindAddress'],
    [{ bindTimeoutMs: -1 }, 'bindTimeoutMs'],
    [{ health: 'yes' }, 'health'],
    [{ windws: 'none' }, 'windws']
  ]
  for (const [extra, option] of refused) {
    await assert.rejects(attachGrpc(server, { ...base, ...extra } as never), (err: InvalidOptionError) => err instanceof InvalidOptionError && err.option.startsWith(option), option)
  }
  for (const notServer of [null, {}, { bindAsync () {} }]) {
    await assert.rejects(attachGrpc(notServer as never, base), (err: InvalidOptionError) => err.option === 'server' && /grpc/.test(err.message))
  }
})

test('a server that already has grpc.health.v1: refused with the fix; health: false keeps the app\'s own', async (t) => {
  const server = echoServer()
  server.addService(healthServiceDefinition, { Check: (_c: unknown, cb: grpc.sendUnaryData<{ status: number }>) => { cb(null, { status: 1 }) }, Watch: () => {} })
  await assert.rejects(attachGrpc(server, base), (err: InvalidOptionError) => err.option === 'health' && /health: false/.test(err.message))
  const lameduck = await attachGrpc(server, { ...base, health: false })
  t.after(() => lameduck.close())
})
