// Property test of the Eureka registry decoding behind eurekaDiscovery(): a fake
// Eureka answers every full fetch with a generated body (valid registries in the
// old and the modern JSON shapes, documents that are not registries, and
// registries whose instances have wrong-typed fields), and after each fetch the
// discovery must hold well-formed instances: the decoded list for a valid body,
// the last good list (and a reported failure) for one that is not a registry.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Instance, Logger } from '@lameduck/core'
import { eurekaDiscovery } from '@lameduck/eureka'
import { forAllAsync, json, seedFromEnv, type Random } from './prng.ts'
import { assertWellFormed } from './well-formed.ts'

type Case =
  | { kind: 'valid', body: string, expected: Instance[] }
  | { kind: 'not-a-registry', body: string }
  | { kind: 'bad-fields', body: string, wellFormed: Instance[] }

const STATUSES = ['UP', 'UP', 'UP', 'DOWN', 'STARTING', 'OUT_OF_SERVICE', 'UNKNOWN']

function portField (r: Random, port: number): unknown {
  return r.pick([port, { $: port, '@enabled': 'true' }, { $: String(port), '@enabled': 'true' }, String(port)])
}

function validCase (r: Random): Case {
  const expected: Instance[] = []
  const apps: unknown[] = []
  for (const name of ['ORDERS', 'PAYMENTS']) {
    if (r.bool(0.2)) continue
    const instances: unknown[] = []
    const n = r.int(0, 4)
    for (let i = 0; i < n; i++) {
      const id = `${name.toLowerCase()}-${r.string(1, 6, 'abcdef0123')}-${i}`
      const host = `10.0.${r.int(0, 255)}.${r.int(1, 254)}`
      const port = r.int(1, 65535)
      const status = r.pick(STATUSES)
      const metadata: Record<string, string> = {}
      for (let k = r.int(0, 3); k > 0; k--) metadata[r.pick(['lameduck.warmup', 'lameduck.weight', 'version', 'zone'])] = String(r.int(0, 1000))
      const empty = Object.keys(metadata).length === 0
      instances.push({
        instanceId: id,
        hostName: host,
        app: name,
        ipAddr: host,
        status,
        port: portField(r, port),
        vipAddress: name.toLowerCase(),
        ...(empty && r.bool() ? { metadata: { '@class': 'java.util.Collections$EmptyMap' } } : empty && r.bool() ? {} : { metadata })
      })
      if (name === 'ORDERS' && status === 'UP') expected.push({ id, service: 'orders', host, port, status: 'UP', metadata })
    }
    // Old (XStream) servers write a single instance as an object, not an array.
    apps.push({ name: r.bool(0.8) ? name : name.toLowerCase(), instance: instances.length === 1 && r.bool() ? instances[0] : instances })
  }
  expected.sort((a, b) => a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
  // An old server may leave the array out of an empty registry (hash code '').
  if (r.bool(0.05)) return { kind: 'valid', body: JSON.stringify({ applications: { versions__delta: 1, apps__hashcode: '' } }), expected: [] }
  const doc = { applications: { versions__delta: '1', apps__hashcode: '', application: apps.length === 1 && r.bool(0.3) ? apps[0] : apps } }
  return { kind: 'valid', body: JSON.stringify(doc), expected }
}

function notARegistry (r: Random): Case {
  const body = r.pick([
    () => r.nasty(200),
    () => '{"applications": {"application": [',
    () => 'null',
    () => json(r.value(3)),
    () => JSON.stringify({ applications: r.pick([null, 0, 'x', [], true]) }),
    () => JSON.stringify({ applications: {} }),
    () => JSON.stringify({ applications: { versions__delta: '1', apps__hashcode: 'UP_3_' } }),
    () => JSON.stringify({ applications: { application: r.pick([null, 0, false, '', 'garbage', 7]) } }),
    () => JSON.stringify({ applications: { application: [{ name: 'ORDERS', instance: [null] }] } }),
    () => JSON.stringify({ applications: { application: [{ name: 'ORDERS' }] } }),
    () => JSON.stringify({ apps: [] }),
    () => '<applications><application/></applications>'
  ])()
  return { kind: 'not-a-registry', body }
}

function badFields (r: Random): Case {
  const wellFormed: Instance[] = []
  const instances: unknown[] = []
  for (let i = r.int(1, 5); i > 0; i--) {
    const good = r.bool(0.4)
    const id = `orders-${i}`
    const host = `10.1.0.${i}`
    const port = 8000 + i
    if (good) {
      instances.push({ instanceId: id, hostName: host, ipAddr: host, app: 'ORDERS', status: 'UP', port: { $: port, '@enabled': 'true' }, metadata: { v: String(i) } })
      wellFormed.push({ id, service: 'orders', host, port, status: 'UP', metadata: { v: String(i) } })
      continue
    }
    const entry: Record<string, unknown> = { app: 'ORDERS', status: 'UP', instanceId: id, hostName: host, ipAddr: host, port: { $: port } }
    // Break one or more fields with values a careless decoder would pass on.
    for (let k = r.int(1, 3); k > 0; k--) {
      const field = r.pick(['instanceId', 'hostName', 'ipAddr', 'port', 'metadata'])
      entry[field] = r.pick([
        () => r.value(2, true),
        () => r.int(-5, 100_000),
        () => ({ $: r.pick([0, -1, 65_536, 70_000, 1.5, 'abc', '', null, true, [8080]]) }),
        () => r.pick([123, true, [], {}, '', null]),
        () => r.nasty(10)
      ])()
      if (entry[field] === undefined) delete entry[field]
    }
    instances.push(entry)
  }
  const doc = { applications: { versions__delta: '1', apps__hashcode: '', application: [{ name: 'ORDERS', instance: instances }] } }
  return { kind: 'bad-fields', body: json(doc), wellFormed }
}

function recordingLogger () {
  const warnings: string[] = []
  const noop = (): void => {}
  const logger: Logger = { debug: noop, info: noop, error: (_o, msg) => { warnings.push(String(msg)) }, warn: (_o, msg) => { warnings.push(String(msg)) } }
  return { logger, warnings }
}

test('eurekaDiscovery decodes any registry body into well-formed instances, or keeps the last good list and reports', async (t) => {
  let body = JSON.stringify({ applications: { versions__delta: '1', apps__hashcode: '', application: [] } })
  const server = createServer((req, res) => {
    if (req.method === 'GET' && req.url?.startsWith('/eureka/apps')) {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(body)
      return
    }
    res.writeHead(404).end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/eureka`
  const { logger, warnings } = recordingLogger()
  // A long fetch interval: every fetch below is one refresh(), so each case sees exactly its body.
  const discovery = eurekaDiscovery({ url, logger, client: { eureka: { registryFetchInterval: 3_600_000, maxRetries: 0 } } })
  t.after(() => discovery.close())
  await discovery.ready()

  let lastGood: Instance[] = []
  let lastWasGood = true
  const seed = seedFromEnv(20_251_122)
  const counts = { valid: 0, 'not-a-registry': 0, 'bad-fields': 0 }
  await forAllAsync('eureka registry body', seed, 2_000, (r) => {
    const roll = r.next()
    return roll < 0.45 ? validCase(r) : roll < 0.75 ? notARegistry(r) : badFields(r)
  }, async (c) => {
    counts[c.kind]++
    body = c.body
    const wasGood = lastWasGood
    lastWasGood = c.kind !== 'not-a-registry'
    const warned = warnings.length
    const refreshed = await discovery.refresh().then(() => true, () => false)
    const list = discovery.instances('orders')
    assertWellFormed(list, 'orders')
    if (c.kind === 'valid') {
      assert.ok(refreshed, 'a valid registry body is a successful fetch')
      assert.deepEqual(list, c.expected)
      lastGood = list
    } else if (c.kind === 'not-a-registry') {
      assert.deepEqual(list, lastGood, 'keeps the last good list')
      // Repeated failures are logged at warn only now and then (every 10th), so as not to flood.
      if (wasGood) assert.ok(warnings.length > warned, `the first bad body after a good one is logged at warn (refresh ${refreshed ? 'resolved' : 'rejected'})`)
      assert.notEqual(discovery.describe().lastError, null, 'describe() shows the failure')
    } else {
      for (const want of c.wellFormed) assert.ok(list.some((i) => i.id === want.id && i.port === want.port && i.host === want.host), `the well-formed instance ${want.id} is kept`)
      lastGood = list
    }
  })
  assert.ok(counts.valid > 500 && counts['not-a-registry'] > 400 && counts['bad-fields'] > 300, JSON.stringify(counts))
})
