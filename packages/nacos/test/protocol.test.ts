// A server that refuses the transport's client API is named at startup, with what to do.
// Nacos 3.2+ answers the 1.x API with 410 Gone (ApiCompatibilityFilter); the body below is the
// one Nacos 3.1.0 sends with nacos.core.api.compatibility.client.enabled=false (test/real/nacos-protocol.test.ts).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { InvalidOptionError, LameduckError, RegistryError } from '@lameduck/core'
import { startNacos } from '@lameduck/devkit'
import { NacosProtocolError, nacosDiscovery, nacosRegistry } from '@lameduck/nacos'
import { instance, waitFor } from './helpers.ts'

// As Nacos 3.1.0 answered POST /nacos/v1/ns/instance with the switch off: Spring's error JSON, whose
// message is Nacos's Result JSON (the context path is a Spring placeholder in Nacos's own text).
const GONE = JSON.stringify({
  timestamp: '2026-11-27T13:14:34.614+00:00',
  status: 410,
  error: 'Gone',
  message: JSON.stringify({ code: 40000, message: 'Current API will be deprecated, please use API(s) `POST $' + '{contextPath:nacos}/v3/client/ns/instance` instead, or set `nacos.core.api.compatibility.client.enabled=true` in application.properties.' }),
  path: '/nacos/v1/ns/instance'
})

async function refusingServer (port = 0): Promise<{ serverList: string, paths: string[], close: () => Promise<void> }> {
  const paths: string[] = []
  const server = createServer((req, res) => {
    paths.push(`${req.method} ${req.url?.split('?')[0]}`)
    res.writeHead(410, { 'content-type': 'text/html' }).end(GONE)
  })
  server.listen(port, '127.0.0.1')
  await once(server, 'listening')
  return { serverList: `127.0.0.1:${(server.address() as AddressInfo).port}`, paths, close: async () => { server.closeAllConnections(); await new Promise((resolve) => server.close(resolve)) } }
}

test('a server refusing the 1.x client API (410 Gone): ready() and register() throw NacosProtocolError saying what to do; nothing is registered', async (t) => {
  const server = await refusingServer()
  const registry = nacosRegistry({ serverList: server.serverList, readyTimeoutMs: 2_000 })
  t.after(async () => { await registry.close(); await server.close() })
  const err = await registry.ready().then(() => null, (e: unknown) => e)
  assert.ok(err instanceof NacosProtocolError && err instanceof LameduckError, `got ${String(err)}`)
  assert.equal(err.code, 'LAMEDUCK_ERR_NACOS_PROTOCOL')
  assert.deepEqual([err.status, err.transport, err.server], [410, 'v1', server.serverList])
  assert.match(err.message, /refuses the 1\.x client HTTP API the nacos npm SDK speaks \(HTTP 410: Current API will be deprecated, please use API\(s\) `POST/)
  assert.match(err.message, /transport: 'v3'/)
  assert.match(err.message, /nacos\.core\.api\.compatibility\.client\.enabled=true/)
  await assert.rejects(registry.register(instance(3000)), NacosProtocolError)
  assert.deepEqual(server.paths, ['GET /nacos/v1/ns/instance/list'], 'asked once; no registration was sent')
  assert.match(String((registry.describe().lastError as { message: string }).message), /refuses/)
})

test('a server down at start proves nothing: once it is up and refusing, the next call names the refusal', async (t) => {
  const probe = createServer().listen(0, '127.0.0.1')
  await once(probe, 'listening')
  const port = (probe.address() as AddressInfo).port
  await new Promise((resolve) => probe.close(resolve))
  const registry = nacosRegistry({ serverList: `127.0.0.1:${port}`, readyTimeoutMs: 2_000 })
  t.after(() => registry.close())
  const down = await registry.register(instance(3000)).then(() => null, (e: unknown) => e)
  assert.ok(down instanceof RegistryError && !(down instanceof NacosProtocolError), `down: a registration error to retry, got ${String(down)}`)
  const server = await refusingServer(port)
  t.after(() => server.close())
  await assert.rejects(registry.register(instance(3000)), (e: Error) => e instanceof NacosProtocolError && e.status === 410)
})

test('discovery on a refusing server: load() throws the same named error', async (t) => {
  const server = await refusingServer()
  const discovery = nacosDiscovery({ serverList: server.serverList, readyTimeoutMs: 2_000 })
  t.after(async () => { await discovery.close(); await server.close() })
  await assert.rejects(discovery.load('orders'), (e: Error) => e instanceof NacosProtocolError && e.transport === 'v1')
})

test("transport: 'v3' on a server without the 3.x client API (Nacos 2.x answers 404) is named too", async (t) => {
  const paths: string[] = []
  const stub = createServer((req, res) => { paths.push(`${req.method} ${req.url?.split('?')[0]}`); res.writeHead(404, { 'content-type': 'application/json' }).end('{"status":404,"error":"Not Found"}') })
  stub.listen(0, '127.0.0.1')
  await once(stub, 'listening')
  const registry = nacosRegistry({ serverList: `127.0.0.1:${(stub.address() as AddressInfo).port}`, transport: 'v3', readyTimeoutMs: 2_000 })
  t.after(async () => { await registry.close(); stub.closeAllConnections(); await new Promise((resolve) => stub.close(resolve)) })
  const err = await registry.register(instance(3000)).then(() => null, (e: unknown) => e)
  assert.ok(err instanceof NacosProtocolError, `got ${String(err)}`)
  assert.equal(err.transport, 'v3')
  assert.match(err.message, /has no 3\.x client open API/)
  assert.deepEqual(paths, ['GET /nacos/v3/client/ns/instance/list'], 'no registration was sent')
})

test("the stand-in with the 1.x API off (3.2's default): transport 'v1' is refused by name, transport 'v3' registers, re-registers after a 21003 beat, discovers and deregisters", async (t) => {
  const server = await startNacos({ v1ClientApi: false })
  const v1 = nacosRegistry({ serverList: server.serverList, readyTimeoutMs: 2_000 })
  const registry = nacosRegistry({ serverList: server.serverList, transport: 'v3', beatIntervalMs: 100 })
  const discovery = nacosDiscovery({ serverList: server.serverList, transport: 'v3', pollIntervalMs: 100 })
  t.after(async () => { await v1.close(); await registry.close(); await discovery.close(); await server.close() })
  const refused = await v1.ready().then(() => null, (e: unknown) => e)
  assert.ok(refused instanceof NacosProtocolError && refused.status === 410, `got ${String(refused)}`)
  assert.match(refused.message, /please use API\(s\) `GET \$\{contextPath:nacos\}\/v3\/client\/ns\/instance\/list`/)

  await registry.register(instance(3001, { metadata: { version: '7' } }))
  await registry.register(instance(3002))
  const listed = await waitFor('both by polling', () => { const l = discovery.instances('orders'); return l.length === 2 && l })
  assert.equal(listed.find((i) => i.port === 3001)!.metadata.version, '7')
  // The server forgets 3001: its next v3 beat answers 21003 and the adapter registers it again, metadata and all.
  await fetch(`${server.url}/v3/client/ns/instance?serviceName=orders&ip=127.0.0.1&port=3001`, { method: 'DELETE' })
  await waitFor('3001 registered again', () => server.instances('orders').some((i) => i.port === 3001 && i.metadata.version === '7'))
  // The counter moves once the registration's answer is read, just after the server has the instance.
  await waitFor('the re-registration counted', () => (registry.describe().registered as Array<{ port: number, beats: { reRegistrations: number } }>).find((r) => r.port === 3001)!.beats.reRegistrations >= 1)
  await registry.deregister(instance(3001))
  await registry.deregister(instance(3002))
  await waitFor('the service empty', () => discovery.instances('orders').length === 0 && discovery.describe().discovery)
  assert.equal(server.subscribers().length, 0, 'no UDP subscriber: the v3 API has no push')
})

test('transport options are checked at the edge', () => {
  assert.throws(() => nacosRegistry({ serverList: '127.0.0.1:8848', transport: 'v2' as 'v3' }), (e: unknown) => e instanceof InvalidOptionError && /'v1'.*'v3'/.test(e.message))
  assert.throws(() => nacosRegistry({ serverList: '127.0.0.1:8848', pollIntervalMs: 1_000 }), /pollIntervalMs.*'v3' only/)
  assert.throws(() => nacosRegistry({ serverList: '127.0.0.1:8848', transport: 'v3', client: { username: 'u', password: 'p' } }), /client\.username.*not supported with transport: 'v3'/)
  assert.throws(() => nacosRegistry({ serverList: '127.0.0.1:8848', transport: 'v3', push: true }), /no push/)
  assert.throws(() => nacosRegistry({ transport: 'v3', client: { endpoint: 'a:8080' } }), /serverList.*required with transport: 'v3'/)
  assert.equal(nacosRegistry({ serverList: '127.0.0.1:8848', transport: 'v3' }).describe().transport, 'v3')
})
