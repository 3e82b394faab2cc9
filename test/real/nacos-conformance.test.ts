// Differential conformance: one suite of Nacos naming behaviours, run against the devkit
// stand-in and the real Nacos 2.3.1 and 3.1.0 servers (test/real/nacos2-server, nacos3-server).
// Where they differ, the expectation is written per target and the difference is explained in
// docs/fidelity.md `## Nacos`. One server per target, shared by every case of that target.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { Instance } from '@lameduck/core'
import { nacosDiscovery, nacosRegistry } from '@lameduck/nacos'
import { until } from '../helpers.ts'
import { realTestOptions, setSwitch } from './helpers/nacos-modern.ts'
import { isHealthy, listHosts, sdkClient, startTarget, TARGETS, type NacosTarget, type TargetName } from './helpers/nacos-targets.ts'

const IP = '127.0.0.1'
const beat = (serviceName: string, port: number): string => JSON.stringify({ ip: IP, port, serviceName, cluster: 'DEFAULT', weight: 1, metadata: {} })
/** Beat every second, unhealthy after 3 s, deleted after 9 s: both sides read these per instance. */
const PRESERVED = { 'preserved.heart.beat.interval': '1000', 'preserved.heart.beat.timeout': '3000', 'preserved.ip.delete.timeout': '9000' }

/** Per-target expectations where the real servers and the stand-in differ (docs/fidelity.md `## Nacos`). */
const differs = {
  'stand-in': { serverPushSwitchFreezesList: false, switchesApply: true, v3ClientApi: true },
  // Standalone 2.3.1 answers a switch update ok and never applies it (alibaba/nacos#12555 reports the same of 2.x standalone).
  '2.3.1': { serverPushSwitchFreezesList: true, switchesApply: false, v3ClientApi: false },
  '3.1.0': { serverPushSwitchFreezesList: true, switchesApply: true, v3ClientApi: true }
} satisfies Record<TargetName, unknown>

function instance (port: number, service: string, metadata: Record<string, string> = {}): Instance {
  return { id: `${IP}:${port}`, service, host: IP, port, status: 'UP', metadata: { 'lameduck.weight': '100', ...metadata } }
}

async function behaviours (t: import('node:test').TestContext, target: NacosTarget): Promise<void> {
  await Promise.all([
    t.test('register, then list: the host with its weight, enabled, health and metadata round-tripped', async () => {
      const metadata = { version: '1.2.3', 'lameduck.state': 'serving', 'x.y': 'a b=c' }
      const answer = await target.call('POST', '/instance', { serviceName: 'reg', ip: IP, port: 9001, weight: 2, metadata: JSON.stringify(metadata) })
      assert.deepEqual(answer, { status: 200, text: 'ok' })
      // The list is the push task's snapshot: the new host shows after the push delay.
      await until(async () => (await listHosts(target, 'reg')).length > 0, 'the registered host listed', 10_000)
      const [host, ...rest] = await listHosts(target, 'reg')
      assert.equal(rest.length, 0)
      assert.deepEqual({ ip: host.ip, port: host.port, weight: host.weight, enabled: host.enabled, healthy: host.healthy, clusterName: host.clusterName, metadata: host.metadata },
        { ip: IP, port: 9001, weight: 2, enabled: true, healthy: true, clusterName: 'DEFAULT', metadata })
      const listed = JSON.parse((await target.call('GET', '/instance/list', { serviceName: 'reg' })).text)
      assert.equal(listed.cacheMillis, 10_000, 'every target hands clients a 10 s poll period by default')
      assert.equal(listed.name, 'DEFAULT_GROUP@@reg', 'the grouped name, as the SDK keys its cache')
    }),
    t.test('an unknown service: 200 with an empty host list', async () => {
      const answer = await target.call('GET', '/instance/list', { serviceName: 'nobody' })
      assert.equal(answer.status, 200)
      assert.deepEqual(JSON.parse(answer.text).hosts, [])
    }),
    t.test('deregister: the very next list still has the host (the snapshot), the refreshed one not; deregistering again still answers ok', async () => {
      await target.call('POST', '/instance', { serviceName: 'dereg', ip: IP, port: 9001 })
      await target.call('POST', '/instance', { serviceName: 'dereg', ip: IP, port: 9002 })
      await until(async () => (await listHosts(target, 'dereg')).length === 2, 'both hosts listed', 10_000)
      assert.deepEqual(await target.call('DELETE', '/instance', { serviceName: 'dereg', ip: IP, port: 9001 }), { status: 200, text: 'ok' })
      assert.deepEqual((await listHosts(target, 'dereg')).map((h) => h.port).sort(), [9001, 9002], 'the very next list: the snapshot from before the DELETE')
      await until(async () => (await listHosts(target, 'dereg')).length === 1, 'the snapshot refreshed', 10_000)
      assert.deepEqual((await listHosts(target, 'dereg')).map((h) => h.port), [9002])
      assert.deepEqual(await target.call('DELETE', '/instance', { serviceName: 'dereg', ip: IP, port: 9001 }), { status: 200, text: 'ok' })
    }),
    t.test('heartbeat: PUT /instance/beat answers the beat interval and code; a full beat for an unknown instance registers it', async () => {
      await target.call('POST', '/instance', { serviceName: 'beat', ip: IP, port: 9001 })
      const answer = await target.call('PUT', '/instance/beat', { serviceName: 'beat', beat: beat('beat', 9001) })
      assert.equal(answer.status, 200)
      const body = JSON.parse(answer.text)
      assert.deepEqual(Object.keys(body).sort(), ['clientBeatInterval', 'code', 'lightBeatEnabled'])
      assert.deepEqual([body.clientBeatInterval, body.code], [5_000, 10200])
      const unknown = JSON.parse((await target.call('PUT', '/instance/beat', { serviceName: 'beat', ip: IP, port: 9004 })).text)
      assert.equal(unknown.code, 20404, 'a light beat (no body) for an unknown instance: 20404')
      await target.call('PUT', '/instance/beat', { serviceName: 'beat', beat: beat('beat', 9003) })
      await until(async () => (await listHosts(target, 'beat')).some((h) => h.port === 9003), 'the beating instance listed', 10_000)
    }),
    t.test('ephemeral expiry: no beats → unhealthy, then removed, as preserved.* metadata says', async () => {
      // A second, beating instance keeps the healthy share above the protect threshold (0 everywhere):
      // with every host unhealthy, all would be listed as healthy.
      await target.call('POST', '/instance', { serviceName: 'expiry', ip: IP, port: 9002, metadata: JSON.stringify(PRESERVED) })
      const beating = setInterval(() => { target.call('PUT', '/instance/beat', { serviceName: 'expiry', beat: beat('expiry', 9002) }).catch(() => {}) }, 1_000)
      t.after(() => clearInterval(beating))
      const at = Date.now()
      await target.call('POST', '/instance', { serviceName: 'expiry', ip: IP, port: 9001, metadata: JSON.stringify(PRESERVED) })
      await until(async () => (await listHosts(target, 'expiry')).some((h) => !isHealthy(h)), 'the silent instance marked unhealthy', 14_000, 100)
      const unhealthyMs = Date.now() - at
      // Before the 30 s default: the preserved delete timeout is honoured (the check runs every 5 s).
      await until(async () => !(await listHosts(target, 'expiry')).some((h) => h.port === 9001), 'the silent instance removed', 25_000, 100)
      const removedMs = Date.now() - at
      clearInterval(beating)
      t.diagnostic(`${target.name}: unhealthy after ${unhealthyMs} ms, removed after ${removedMs} ms`)
      assert.ok(unhealthyMs >= 3_000 && removedMs >= 9_000, `${unhealthyMs} / ${removedMs}`)
    }),
    t.test('the nacos SDK: register with metadata, getAllInstances, subscribe, deregister reaches the subscriber', async () => {
      const client = await sdkClient(target)
      try {
        await client.registerInstance('sdk', { ip: IP, port: 9101, weight: 1, metadata: { role: 'a' } })
        await client.registerInstance('sdk', { ip: IP, port: 9102, weight: 1, metadata: { role: 'b' } })
        const all = await until(async () => { const l = await client.getAllInstances('sdk'); return l.length === 2 && l }, 'both instances', 10_000)
        assert.deepEqual(all.map((h: any) => [h.port, h.healthy, h.metadata.role]).sort(), [[9101, true, 'a'], [9102, true, 'b']])
        let seen: any[] = []
        client.subscribe('sdk', (hosts: any[]) => { seen = hosts })
        await until(() => seen.length === 2, 'the subscriber sees both', 10_000)
        await client.deregisterInstance('sdk', { ip: IP, port: 9101 })
        await until(() => seen.length === 1 && seen[0].port === 9102, 'the subscriber sees the deregistration', 15_000)
      } finally { await client.close() }
    }),
    t.test('the 3.x client open API: register, heartbeat (21003 when unknown), list, deregister — or 404 before 3.0', async () => {
      const v3 = async (method: string, path: string, params: Record<string, string | number | boolean>): Promise<{ status: number, body: any }> => {
        const res = await fetch(`http://${target.serverList}/nacos/v3/client/ns/instance${path}?${new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, String(v)]))}`, { method })
        const text = await res.text()
        return { status: res.status, body: text.startsWith('{') ? JSON.parse(text) : text }
      }
      if (!differs[target.name].v3ClientApi) {
        assert.equal((await v3('GET', '/list', { serviceName: 'v3' })).status, 404)
        return
      }
      const ok = { status: 200, body: { code: 0, message: 'success', data: 'ok' } }
      assert.deepEqual(await v3('GET', '/list', { serviceName: 'v3' }), { status: 200, body: { code: 0, message: 'success', data: [] } })
      assert.deepEqual(await v3('POST', '', { serviceName: 'v3', ip: IP, port: 9401, metadata: JSON.stringify({ k: 'v' }) }), ok)
      await v3('POST', '', { serviceName: 'v3', ip: IP, port: 9402, enabled: false })
      assert.deepEqual(await v3('POST', '', { serviceName: 'v3', ip: IP, port: 9401, heartBeat: true }), ok)
      assert.deepEqual(await v3('POST', '', { serviceName: 'v3', ip: IP, port: 9409, heartBeat: true }), { status: 200, body: { code: 21003, message: 'instance not found', data: null } })
      const listed = await until(async () => { const l = (await v3('GET', '/list', { serviceName: 'v3' })).body.data; return l.length > 0 && l }, 'the v3 list', 10_000)
      assert.deepEqual(listed.map((h: any) => [h.port, h.healthy, h.enabled, h.metadata]), [[9401, true, true, { k: 'v' }]], 'the disabled host is not listed')
      assert.deepEqual(await v3('DELETE', '', { serviceName: 'v3', ip: IP, port: 9777 }), ok, 'deregistering an unknown instance is ok')
    }),
    t.test('@lameduck/nacos: register, beat past the delete timeout, discover, deregister to an empty list, no forged pushes needed', async () => {
      const registry = nacosRegistry({ serverList: target.serverList, beatIntervalMs: 1_000 })
      const discovery = nacosDiscovery({ serverList: target.serverList })
      try {
        const lists: Instance[][] = []
        discovery.subscribe('lame', (list) => lists.push(list))
        await registry.register(instance(9201, 'lame', PRESERVED))
        await registry.register(instance(9202, 'lame', PRESERVED))
        await until(() => lists.at(-1)?.length === 2, 'discovery sees both', 10_000)
        // Past the 9 s delete timeout on beats alone (the adapter sends them; the SDK's own loop waits 10 s).
        const beats = (): number => (registry.describe().registered as Array<{ port: number, beats: { beats: number } }>).find((r) => r.port === 9201)!.beats.beats
        const beatsBefore = beats()
        await until(() => beats() >= beatsBefore + 10, 'ten more beats', 30_000, 200)
        assert.deepEqual((await listHosts(target, 'lame')).map((h) => [h.port, h.healthy]).sort(), [[9201, true], [9202, true]], 'still listed and healthy')
        await registry.deregister(instance(9201, 'lame'))
        await until(() => lists.at(-1)?.length === 1, 'discovery drops the deregistered one', 15_000)
        await registry.deregister(instance(9202, 'lame'))
        await until(() => lists.at(-1)?.length === 0, 'discovery reports the service empty (the SDK alone never does)', 15_000)
        const pushes = (discovery.describe().sdk as { pushes: { accepted: number, refused: number } }).pushes
        assert.equal(pushes.refused, 0, `every push came from an address of the server (${JSON.stringify(pushes)})`)
        assert.ok(((discovery.describe().discovery as { updates: { changesByPush: number } }).updates.changesByPush) >= 1, 'changes arrived by UDP push')
      } finally {
        await registry.close()
        await discovery.close()
      }
    })
  ])
}

/** The server-wide push switch: the real servers stop refreshing the list snapshot with it (it runs in the push task). */
async function pushSwitch (t: import('node:test').TestContext, target: NacosTarget): Promise<void> {
  if (target.real === undefined) return
  if (!differs[target.name].switchesApply) {
    await t.test('switches: the update answers ok, the live switches never change (standalone 2.3.1, alibaba/nacos#12555)', async () => {
      const answer = await target.call('PUT', '/operator/switches', { entry: 'pushEnabled', value: false })
      assert.deepEqual(answer, { status: 200, text: 'ok' })
      // Proving an absence takes a wait: 3.1.0 applies the same update within milliseconds.
      await new Promise((resolve) => setTimeout(resolve, 3_000))
      assert.equal(JSON.parse((await target.call('GET', '/operator/switches')).text).pushEnabled, true)
    })
    return
  }
  await t.test('pushEnabled=false on the server: the /instance/list snapshot is no longer refreshed (polling clients see nothing new)', async () => {
    await target.call('POST', '/instance', { serviceName: 'frozen', ip: IP, port: 9301 })
    await until(async () => (await listHosts(target, 'frozen')).length === 1, 'listed', 10_000)
    await setSwitch(target.real!, 'pushEnabled', false)
    try {
      await target.call('POST', '/instance', { serviceName: 'frozen', ip: IP, port: 9302 })
      // Proving an absence takes a wait: five times the push delay + task check that refresh the list with push on.
      await new Promise((resolve) => setTimeout(resolve, 5 * 600))
      assert.equal(differs[target.name].serverPushSwitchFreezesList, true)
      assert.deepEqual((await listHosts(target, 'frozen')).map((h) => h.port), [9301], 'the snapshot from before the switch')
    } finally {
      await setSwitch(target.real!, 'pushEnabled', true)
    }
    // The task waited in the engine: it runs once push is back on.
    await until(async () => (await listHosts(target, 'frozen')).length === 2, 'refreshed once push is back on', 10_000)
  })
}

for (const name of TARGETS) {
  test(`nacos conformance: ${name}`, { ...(name === 'stand-in' ? {} : realTestOptions()), concurrency: true, timeout: 300_000 }, async (t) => {
    const target = await startTarget(name)
    t.after(() => target.close())
    await behaviours(t, target)
    await pushSwitch(t, target)
  })
}
