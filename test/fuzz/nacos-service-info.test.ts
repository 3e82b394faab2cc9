// Property test of the Nacos ServiceInfo decoding behind nacosDiscovery(). Every
// generated body goes in where the SDK hands a pushed or polled ServiceInfo to
// its host reactor (processServiceJSON, which the adapter hooks), on a real
// nacos client watching a real devkit Nacos. After each body the discovery must
// hold well-formed instances: the routable hosts of a valid body, the last good
// list for a body that carries no host list, and only the well-formed hosts of a
// body whose host entries have wrong-typed fields.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { Instance, Logger } from '@lameduck/core'
import { startNacos } from '@lameduck/devkit'
import { nacosDiscovery } from '@lameduck/nacos'
import { forAll, json, seedFromEnv, type Random } from './prng.ts'
import { assertWellFormed } from './well-formed.ts'

type Case =
  | { kind: 'valid', body: string, expected: Instance[] }
  | { kind: 'no-hosts', body: string }
  | { kind: 'bad-hosts', body: string, wellFormed: Instance[] }

const NAME = 'DEFAULT_GROUP@@orders'
let refTime = 1_700_000_000_000

function info (r: Random, hosts: unknown, over: Record<string, unknown> = {}): string {
  refTime += 10_000 // newer than the last answer, so none is skipped as a late poll
  return json({ name: NAME, clusters: 'DEFAULT', cacheMillis: r.pick([1_000, 10_000]), hosts, lastRefTime: refTime, checksum: '', allIPs: false, reachProtectionThreshold: false, valid: true, ...over })
}

function host (r: Random, ip: string, port: number) {
  const metadata: Record<string, unknown> = {}
  for (let k = r.int(0, 3); k > 0; k--) metadata[r.pick(['lameduck.warmup', 'lameduck.weight', 'version'])] = r.pick([String(r.int(0, 1000)), r.int(0, 9), true])
  return {
    instanceId: `${ip}#${port}#DEFAULT#${NAME}`,
    ip,
    port,
    weight: r.pick([1, 1, 0.5, 100, 0]),
    healthy: r.bool(0.85),
    enabled: r.bool(0.9),
    ephemeral: true,
    clusterName: 'DEFAULT',
    serviceName: NAME,
    metadata: r.bool(0.9) ? metadata : null
  }
}

function expectedOf (hosts: Array<ReturnType<typeof host>>): Instance[] {
  return hosts
    .filter((h) => h.healthy && h.enabled && h.weight > 0)
    .map((h) => ({
      id: `${h.ip}:${h.port}`,
      service: 'orders',
      host: h.ip,
      port: h.port,
      status: 'UP' as const,
      metadata: Object.fromEntries(Object.entries(h.metadata ?? {}).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]))
    }))
    .sort((a, b) => a.id.localeCompare(b.id))
}

function validCase (r: Random): Case {
  const hosts = r.array(0, 5, (i) => host(r, `10.0.${r.int(0, 9)}.${i + 1}`, r.int(1, 65_535)))
  return { kind: 'valid', body: info(r, hosts), expected: expectedOf(hosts) }
}

function noHosts (r: Random): Case {
  return {
    kind: 'no-hosts',
    body: r.pick([
      () => info(r, null),
      () => info(r, r.pick([{}, 'hosts', 5, true])),
      () => JSON.stringify({ name: NAME, clusters: 'DEFAULT', lastRefTime: (refTime += 10_000) }),
      () => r.nasty(120),
      () => 'null',
      () => '{"name":"DEFAULT_GROUP@@orders","clusters":"DEFAULT","hosts":[',
      () => json(r.value(3))
    ])()
  }
}

function badHosts (r: Random): Case {
  const good: Array<ReturnType<typeof host>> = []
  const hosts: unknown[] = []
  for (let i = r.int(1, 5); i > 0; i--) {
    const h = { ...host(r, `10.2.0.${i}`, 9_000 + i), healthy: true, enabled: true, weight: 1 }
    if (r.bool(0.4)) { good.push(h); hosts.push(h); continue }
    const entry: Record<string, unknown> = { ...h }
    for (let k = r.int(1, 2); k > 0; k--) {
      const field = r.pick(['ip', 'port', 'metadata', 'whole'])
      const bad = r.pick([() => r.value(2, true), () => r.pick([123, '', null, true, [], {}, -1, 0, 65_536, 1.5, '8080', 'abc']), () => r.nasty(8)])()
      if (field === 'whole') { hosts.push(bad); continue }
      entry[field] = bad
    }
    // A wrong-typed metadata value is not a reason to drop a host: count it as good when ip and port are.
    hosts.push(entry)
  }
  return { kind: 'bad-hosts', body: info(r, hosts), wellFormed: expectedOf(good) }
}

function recordingLogger () {
  const reports: string[] = []
  const noop = (): void => {}
  const logger: Logger = { debug: noop, info: noop, warn: (_o, msg) => { reports.push(String(msg)) }, error: (_o, msg) => { reports.push(String(msg)) } }
  return { logger, reports }
}

test('nacosDiscovery decodes any ServiceInfo into well-formed instances, or keeps the last good list', async (t) => {
  const server = await startNacos({ push: false, cacheMillis: 3_600_000 })
  const { logger, reports } = recordingLogger()
  const discovery = nacosDiscovery({ serverList: server.serverList, logger })
  t.after(async () => { await discovery.close(); await server.close() })
  assert.deepEqual(await discovery.load('orders'), [])
  const reactor = (discovery.client as unknown as { _hostReactor: { processServiceJSON (json: string): unknown } })._hostReactor
  assert.equal(typeof reactor.processServiceJSON, 'function')

  let lastGood: Instance[] = []
  const counts = { valid: 0, 'no-hosts': 0, 'bad-hosts': 0 }
  forAll('nacos service info', seedFromEnv(20_251_123), 3_000, (r) => {
    const roll = r.next()
    return roll < 0.45 ? validCase(r) : roll < 0.7 ? noHosts(r) : badHosts(r)
  }, (c) => {
    counts[c.kind]++
    // Where the SDK's push receiver and poller hand a body over. The SDK itself may
    // throw on garbage (JSON.parse); that is its own error path, not the adapter's.
    try { reactor.processServiceJSON(c.body) } catch {}
    const list = discovery.instances('orders')
    assertWellFormed(list, 'orders')
    if (c.kind === 'valid') {
      assert.deepEqual(list, c.expected)
      lastGood = list
    } else if (c.kind === 'no-hosts') {
      assert.deepEqual(list, lastGood, 'keeps the last good list')
    } else {
      for (const want of c.wellFormed) assert.ok(list.some((i) => i.id === want.id), `the well-formed host ${want.id} is kept`)
      assert.ok(list.length <= c.wellFormed.length + 5)
      lastGood = list
    }
  })
  assert.ok(counts.valid > 1_000 && counts['no-hosts'] > 500 && counts['bad-hosts'] > 500, JSON.stringify(counts))
  assert.ok(!reports.some((m) => /listener threw/.test(m)), `no exception escaped into the SDK bridge: ${reports.find((m) => /threw/.test(m))}`)
})
