// Nacos 3.2 and later turn the 1.x client HTTP API off by default (alibaba/nacos#12922, #14069);
// 3.2 is not served here, so the real 3.1.0 server runs with the same switch off
// (nacos.core.api.compatibility.client.enabled=false, which 3.2 makes the default). On it:
// the nacos npm SDK fails, @lameduck/nacos names the refusal at startup, and its 'v3' transport
// (the 3.x client open API) registers, beats, re-registers, discovers and deregisters.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { Instance } from '@lameduck/core'
import { NacosProtocolError, nacosDiscovery, nacosRegistry } from '@lameduck/nacos'
import { until } from '../helpers.ts'
import { realTestOptions, startModernNacos, type ModernNacos } from './helpers/nacos-modern.ts'
import { sdkClient } from './helpers/nacos-targets.ts'

const IP = '127.0.0.1'
const PRESERVED = { 'preserved.heart.beat.interval': '1000', 'preserved.heart.beat.timeout': '3000', 'preserved.ip.delete.timeout': '9000' }

function instance (port: number, metadata: Record<string, string> = {}): Instance {
  return { id: `${IP}:${port}`, service: 'orders', host: IP, port, status: 'UP', metadata: { 'lameduck.weight': '100', ...metadata } }
}

async function v3List (server: ModernNacos, serviceName: string): Promise<Array<{ port: number, healthy: boolean, metadata: Record<string, string> }>> {
  const answer = await server.call('GET', '/v3/client/ns/instance/list', { serviceName })
  assert.equal(answer.status, 200, answer.text)
  return (JSON.parse(answer.text) as { data: Array<{ port: number, healthy: boolean, metadata: Record<string, string> }> }).data
}

test('Nacos 3.1.0 with the 1.x client API off (3.2\'s default)', { ...realTestOptions(), concurrency: false, timeout: 240_000 }, async (t) => {
  const server = await startModernNacos('3.1.0', { properties: { 'nacos.core.api.compatibility.client.enabled': false } })
  t.after(() => server.close())

  await t.test('the v1 API answers 410 Gone naming the v3 alternative', async () => {
    const answer = await server.call('POST', '/v1/ns/instance', { serviceName: 'orders', ip: IP, port: 9000 })
    assert.equal(answer.status, 410)
    assert.match(answer.text, /v3\/client\/ns\/instance/)
  })

  await t.test('the plain nacos SDK cannot register (what users of it meet on 3.2)', async () => {
    const client = await sdkClient({ name: '3.1.0', serverList: server.serverList, call: async () => ({ status: 0, text: '' }), close: async () => {} })
    try {
      await assert.rejects(client.registerInstance('orders', { ip: IP, port: 9001 }))
    } finally { await client.close() }
  })

  await t.test("@lameduck/nacos (transport 'v1'): ready() throws NacosProtocolError with the server's reason and both ways out", async () => {
    const registry = nacosRegistry({ serverList: server.serverList })
    try {
      const err = await registry.ready().then(() => null, (e: unknown) => e)
      assert.ok(err instanceof NacosProtocolError, `got ${String(err)}`)
      assert.equal(err.status, 410)
      assert.match(err.message, /Current API will be deprecated/)
      assert.match(err.message, /transport: 'v3'.*nacos\.core\.api\.compatibility\.client\.enabled=true/s)
    } finally { await registry.close() }
  })

  await t.test("transport 'v3': register, beat past the delete timeout, re-register after a 21003 beat, discover by polling, deregister to empty", async () => {
    const registry = nacosRegistry({ serverList: server.serverList, transport: 'v3', beatIntervalMs: 1_000 })
    const discovery = nacosDiscovery({ serverList: server.serverList, transport: 'v3', pollIntervalMs: 500 })
    try {
      const lists: Instance[][] = []
      discovery.subscribe('orders', (list) => lists.push(list))
      await registry.register(instance(9101, { ...PRESERVED, version: '7' }))
      await registry.register(instance(9102, PRESERVED))
      await until(() => lists.at(-1)?.length === 2, 'discovery sees both', 10_000)
      assert.equal(lists.at(-1)!.find((i) => i.port === 9101)!.metadata.version, '7', 'metadata round-tripped')
      const entry = (port: number): { beats: number, reRegistrations: number } => (registry.describe().registered as Array<{ port: number, beats: { beats: number, reRegistrations: number } }>).find((r) => r.port === port)!.beats
      const before = entry(9101).beats
      await until(() => entry(9101).beats >= before + 10, 'ten beats (longer than the 9 s delete timeout)', 30_000, 200)
      assert.deepEqual((await v3List(server, 'orders')).map((h) => [h.port, h.healthy]).sort(), [[9101, true], [9102, true]], 'kept alive by the v3 heartbeats')
      // The server forgets it (an operator, a restart): the next beat answers 21003 and the adapter registers it again.
      const removed = await server.call('DELETE', '/v3/client/ns/instance', { serviceName: 'orders', ip: IP, port: 9101 })
      assert.equal(removed.status, 200, removed.text)
      await until(() => entry(9101).reRegistrations >= 1, 'the adapter re-registered after the 21003 beat', 15_000, 100)
      await until(async () => (await v3List(server, 'orders')).some((h) => h.port === 9101 && h.metadata.version === '7'), 'back with its metadata', 10_000)
      await registry.deregister(instance(9101))
      await until(() => lists.at(-1)?.length === 1, 'discovery drops the deregistered one', 10_000)
      await registry.deregister(instance(9102))
      await until(() => lists.at(-1)?.length === 0, 'discovery reports the service empty', 10_000)
      assert.equal((discovery.describe().discovery as { updates: { pushes: number } }).updates.pushes, 0, 'no push on this transport')
    } finally {
      await registry.close()
      await discovery.close()
    }
  })
})
