import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startEureka, type EurekaServer } from '@lameduck/devkit'
import { virtualClock } from '@lameduck/core'
import { body, call, DC, fixture, rawGet, until } from './eureka-helpers.ts'

async function withServer (options: Parameters<typeof startEureka>[0], fn: (s: EurekaServer) => Promise<void>): Promise<void> {
  const s = await startEureka({ useReadOnlyCache: false, ...options })
  try { await fn(s) } finally { await s.close() }
}

const apps = async (s: EurekaServer, path = '/apps'): Promise<any> => (await call('GET', s.url + path)).json.applications

test('register 204, heartbeat 200/404, cancel 200/404 on /eureka and /eureka/v2, with and without trailing slashes', async () => {
  await withServer({}, async (s) => {
    const base = s.url
    assert.equal((await call('POST', `${base}/apps/orders`, { body: body('orders-1') })).status, 204)
    assert.equal((await call('PUT', `${base}/apps/ORDERS/orders-1`)).status, 200, 'app names are case-insensitive')
    assert.equal((await call('PUT', `${base}/v2/apps/Orders/orders-1/`)).status, 200, '/eureka/v2 and a trailing slash work too')
    assert.equal((await call('PUT', `${base}/apps/orders/ORDERS-1`)).status, 404, 'instance ids are case-sensitive')
    assert.equal((await call('PUT', `${base}/apps/orders/nope`)).status, 404)
    const full = await apps(s, '/v2/apps/')
    assert.equal(full.application[0].name, 'ORDERS', 'stored upper-case')
    assert.equal((await call('DELETE', `${base}/apps/orders/orders-1`)).status, 200)
    assert.equal((await call('DELETE', `${base}/apps/orders/orders-1`)).status, 404)
    assert.equal((await call('PUT', `${base}/apps/orders/orders-1`)).status, 404, 'heartbeat after cancel: re-register required')
    assert.deepEqual((await apps(s)).application, [], 'an empty registry still writes the application array')
  })
})

test('the real server\'s registration checks answer 400 with its messages', async () => {
  await withServer({}, async (s) => {
    const post = async (b: unknown, app = 'orders'): Promise<[number, string]> => {
      const r = await call('POST', `${s.url}/apps/${app}`, { body: b })
      return [r.status, r.body]
    }
    assert.deepEqual(await post(body('', { hostName: '' })), [400, 'Missing instanceId'])
    assert.deepEqual(await post(body('x', { hostName: '' })), [400, 'Missing hostname'])
    assert.deepEqual(await post(body('x', { ipAddr: undefined })), [400, 'Missing ip address'])
    assert.deepEqual(await post(body('x', { app: undefined })), [400, 'Missing appName'])
    assert.deepEqual(await post(body('x'), 'billing'), [400, 'Mismatched appName, expecting BILLING but was ORDERS'])
    assert.deepEqual(await post(body('x', { dataCenterInfo: undefined })), [400, 'Missing dataCenterInfo'])
    assert.deepEqual(await post(body('x', { dataCenterInfo: { '@class': DC['@class'] } })), [400, 'Missing dataCenterInfo Name'])
    assert.equal((await post('{not json'))[0], 400)
    // Without instanceId the id is the hostName, as in InstanceInfo.getId().
    assert.equal((await post(body('', { instanceId: undefined, hostName: 'host-a' })))[0], 204)
    assert.equal((await call('GET', `${s.url}/apps/orders/host-a`)).status, 200)
    // The minimal body a real server accepts.
    assert.deepEqual(await post(fixture('constructed-register-body-minimal.json'), 'ORDERS'), [204, ''])
  })
})

test('lenient by default, strict returns the 400s of the real codec', async () => {
  const sloppy = body('x', { port: 8080, dataCenterInfo: { name: 'MyOwn' } })
  await withServer({}, async (s) => {
    assert.equal((await call('POST', `${s.url}/apps/orders`, { body: sloppy })).status, 204)
    const inst = (await call('GET', `${s.url}/apps/orders/x`)).json.instance
    assert.deepEqual(inst.port, { $: 8080, '@enabled': 'true' }, 'a plain port is coerced and written back in object form')
    assert.equal(inst.dataCenterInfo['@class'], DC['@class'])
  })
  await withServer({ strict: true }, async (s) => {
    const r = await call('POST', `${s.url}/apps/orders`, { body: sloppy })
    assert.equal(r.status, 400)
    assert.match(r.body, /port/)
    const noClass = await call('POST', `${s.url}/apps/orders`, { body: body('x', { dataCenterInfo: { name: 'MyOwn' } }) })
    assert.equal(noClass.status, 400)
    assert.match(noClass.body, /@class/)
    assert.equal((await call('POST', `${s.url}/apps/orders`, { body: body('x') })).status, 204)
  })
})

test('status overrides follow the real rule chain', async () => {
  await withServer({}, async (s) => {
    const u = `${s.url}/apps/orders/o1`
    const status = async (): Promise<[string, string]> => {
      const i = (await call('GET', u)).json.instance
      return [i.status, i.overriddenStatus]
    }
    assert.equal((await call('PUT', `${u}/status?value=OUT_OF_SERVICE`)).status, 404, 'unknown instance')
    await call('POST', `${s.url}/apps/orders`, { body: body('o1') })
    assert.equal((await call('PUT', `${u}/status?value=OUT_OF_SERVICE`)).status, 200)
    assert.deepEqual(await status(), ['OUT_OF_SERVICE', 'OUT_OF_SERVICE'])
    // eureka-js-client re-registers as UP; the override wins (OverrideExistsRule).
    await call('POST', `${s.url}/apps/orders`, { body: body('o1') })
    assert.deepEqual(await status(), ['OUT_OF_SERVICE', 'OUT_OF_SERVICE'])
    assert.equal((await call('PUT', u)).status, 200, 'heartbeats keep an OUT_OF_SERVICE instance')
    assert.deepEqual(await status(), ['OUT_OF_SERVICE', 'OUT_OF_SERVICE'])
    // A registrant that says DOWN keeps DOWN (DownOrStartingRule), even with an override.
    await call('POST', `${s.url}/apps/orders`, { body: body('o1', { status: 'DOWN' }) })
    assert.deepEqual(await status(), ['DOWN', 'OUT_OF_SERVICE'])
    await call('POST', `${s.url}/apps/orders`, { body: body('o1') })
    // DELETE with value=UP: back in service.
    assert.equal((await call('DELETE', `${u}/status?value=UP`)).status, 200)
    assert.deepEqual(await status(), ['UP', 'UNKNOWN'])
    // DELETE without value: UNKNOWN, and the next heartbeat says "re-register".
    await call('PUT', `${u}/status?value=OUT_OF_SERVICE`)
    assert.equal((await call('DELETE', `${u}/status`)).status, 200)
    assert.deepEqual(await status(), ['UNKNOWN', 'UNKNOWN'])
    assert.equal((await call('PUT', u)).status, 404)
    await call('POST', `${s.url}/apps/orders`, { body: body('o1') })
    assert.deepEqual(await status(), ['UP', 'UNKNOWN'])
    // An unknown status value is a 500 (InstanceStatus.valueOf), like the real server.
    assert.equal((await call('PUT', `${u}/status?value=SLEEPY`)).status, 500)
    // Cancel removes the override: a new registration is UP.
    await call('PUT', `${u}/status?value=OUT_OF_SERVICE`)
    await call('DELETE', u)
    await call('POST', `${s.url}/apps/orders`, { body: body('o1') })
    assert.deepEqual(await status(), ['UP', 'UNKNOWN'])
  })
})

test('metadata PUT merges and re-registers; renew with a newer lastDirtyTimestamp asks to re-register', async () => {
  await withServer({}, async (s) => {
    const u = `${s.url}/apps/orders/o1`
    assert.equal((await call('PUT', `${u}/metadata?a=1`)).status, 404)
    await call('POST', `${s.url}/apps/orders`, { body: body('o1', { metadata: { keep: 'me' } }) })
    assert.equal((await call('PUT', `${u}/metadata?a=1&lameduck.weight=50`)).status, 200)
    const i = (await call('GET', u)).json.instance
    assert.deepEqual(i.metadata, { keep: 'me', a: '1', 'lameduck.weight': '50' })
    assert.equal(i.actionType, 'ADDED')
    const dirty = Number(i.lastDirtyTimestamp)
    assert.equal((await call('PUT', `${u}?status=UP&lastDirtyTimestamp=${dirty}`)).status, 200)
    assert.equal((await call('PUT', `${u}?status=UP&lastDirtyTimestamp=${dirty + 1000}`)).status, 404)
  })
})

test('JSON has the real shapes (compared with the constructed full fixture); XML without a json Accept; gzip on request', async () => {
  await withServer({}, async (s) => {
    const want = fixture('constructed-apps-full-modern.json') as any
    // Re-create the fixture's registry: same bodies, same override.
    for (const app of want.applications.application) {
      for (const i of app.instance) {
        const { status: _s, overriddenStatus: _o, leaseInfo: _l, lastUpdatedTimestamp: _u, lastDirtyTimestamp: _d, actionType: _a, isCoordinatingDiscoveryServer: _c, ...reg } = i
        const metadata = i.metadata['@class'] ? {} : i.metadata
        assert.equal((await call('POST', `${s.url}/apps/${app.name}`, { body: { instance: { ...reg, metadata, status: 'UP' } } })).status, 204)
        if (i.status === 'OUT_OF_SERVICE') await call('PUT', `${s.url}/apps/${app.name}/${i.instanceId}/status?value=OUT_OF_SERVICE`)
      }
    }
    const got = (await call('GET', `${s.url}/apps`)).json
    const volatile = new Set(['registrationTimestamp', 'lastRenewalTimestamp', 'serviceUpTimestamp', 'lastUpdatedTimestamp', 'lastDirtyTimestamp'])
    const normalise = (v: any, key = ''): any => {
      if (Array.isArray(v)) return v.map((x) => normalise(x)).sort((a, b) => JSON.stringify(a) < JSON.stringify(b) ? -1 : 1)
      if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, normalise(x, k)]))
      return volatile.has(key) ? typeof v : v
    }
    // orders-2's actionType is MODIFIED in both (status change after registration).
    assert.deepEqual(normalise(got), normalise(want))
    assert.deepEqual(Object.keys(got.applications.application[0].instance[0]), Object.keys(want.applications.application[0].instance[0]), 'same field order')

    const xml = await call('GET', `${s.url}/apps`, { accept: null })
    assert.match(xml.headers.get('content-type') ?? '', /xml/)
    assert.match(xml.body, /^<\?xml .*<applications><versions__delta>1<\/versions__delta><apps__hashcode>OUT_OF_SERVICE_1_UP_2_<\/apps__hashcode><application><name>ORDERS<\/name>/)
    assert.match(xml.body, /<port enabled="true">8080<\/port>/)

    const zipped = await rawGet(`${s.url}/apps`, { accept: 'application/json', 'accept-encoding': 'gzip, deflate' })
    assert.equal(zipped.encoding, 'gzip')
    assert.deepEqual(JSON.parse(zipped.text), got)

    assert.equal((await call('GET', `${s.url}/apps/billing`)).json.application.instance.length, 1)
    assert.equal((await call('GET', `${s.url}/apps/nothing`)).status, 404)
    assert.equal((await call('GET', `${s.url}/instances/billing-1`)).json.instance.app, 'BILLING')
    assert.equal((await call('GET', `${s.url}/vips/orders`)).json.applications.application[0].instance.length, 2)
    assert.deepEqual((await call('GET', `${s.url}/vips/none`)).json.applications.application, [])
  })
})

test('delta: recently changed instances with actionType, full-registry hashcode, versions that count up, retention', async () => {
  // Pruning does not invalidate the cached delta payload (nor does it on a real server): it
  // shows once the read-write entry expires, so that expiry is shortened too.
  await withServer({ retentionTimeInMSInDeltaQueue: 300, deltaRetentionTimerIntervalInMs: 50, responseCacheAutoExpirationMs: 50 }, async (s) => {
    const want = fixture('constructed-apps-delta-modern.json') as any
    await call('POST', `${s.url}/apps/orders`, { body: body('orders-1') })
    // orders-1's registration leaves the delta queue after the retention time.
    const start = Date.now()
    await until(async () => (await apps(s, '/apps/delta')).application.length === 0, 'the delta item to be pruned after retention', { intervalMs: 20 })
    assert.ok(Date.now() - start >= 250, 'not pruned before the retention time')
    await call('POST', `${s.url}/apps/orders`, { body: body('orders-2') })
    await call('POST', `${s.url}/apps/orders`, { body: body('orders-3') })
    await call('POST', `${s.url}/apps/billing`, { body: body('billing-1', {}, 'billing') })
    await call('PUT', `${s.url}/apps/orders/orders-2/status?value=OUT_OF_SERVICE`)
    await call('DELETE', `${s.url}/apps/orders/orders-3`)
    const d1 = await apps(s, '/apps/delta')
    const actions = Object.fromEntries(d1.application.flatMap((a: any) => a.instance.map((i: any) => [i.instanceId, i.actionType])))
    const wantActions = Object.fromEntries(want.applications.application.flatMap((a: any) => a.instance.map((i: any) => [i.instanceId, i.actionType])))
    assert.deepEqual(actions, wantActions)
    assert.equal(d1.apps__hashcode, want.applications.apps__hashcode, 'hash of the full registry, not of the delta')
    assert.equal(typeof d1.versions__delta, 'string')
    await call('PUT', `${s.url}/apps/orders/orders-2`)
    await call('POST', `${s.url}/apps/billing`, { body: body('billing-1', {}, 'billing') })
    const d2 = await apps(s, '/apps/delta')
    assert.ok(Number(d2.versions__delta) > Number(d1.versions__delta))
  })
  await withServer({ disableDelta: true }, async (s) => {
    assert.equal((await call('GET', `${s.url}/apps/delta`)).status, 403)
  })
})

test('leases: durationInSecs honoured, x2 expiry bug on by default, eviction timer, self-preservation', async () => {
  // On a virtual clock: lease ends and the eviction timer are exact, whatever the machine's load.
  const lease = { leaseInfo: { renewalIntervalInSecs: 1, durationInSecs: 1 } }
  const status = async (s: EurekaServer, id: string): Promise<number> => (await call('GET', `${s.url}/apps/orders/${id}`)).status
  const clock = virtualClock()
  // Eviction of a single lease needs self-preservation off, as on a real server configured so.
  await withServer({ clock, evictionIntervalTimerInMs: 50, leaseExpiryBug: false, selfPreservation: false }, async (fixed) => {
    await withServer({ clock, evictionIntervalTimerInMs: 50, selfPreservation: false }, async (buggy) => {
      for (const s of [fixed, buggy]) await call('POST', `${s.url}/apps/orders`, { body: body('a', lease) })
      await Promise.all([fixed, buggy].map((s) => call('PUT', `${s.url}/apps/orders/a`)))
      // Renewed at the same moment: without the bug the lease ends 1 x duration after the renew, with it 2 x.
      await clock.advance(950)
      assert.deepEqual([await status(fixed, 'a'), await status(buggy, 'a')], [200, 200], 'both leases hold within 1 x duration')
      await clock.advance(150)
      assert.deepEqual([await status(fixed, 'a'), await status(buggy, 'a')], [404, 200], 'without the bug the lease ended after 1 x duration (+ one eviction tick)')
      assert.equal(fixed.snapshot().length, 0, 'evicted')
      await clock.advance(800)
      assert.equal(await status(buggy, 'a'), 200, 'with the bug a renewed lease holds until 2 x duration')
      await clock.advance(200)
      assert.equal(await status(buggy, 'a'), 404, 'with the bug the lease ended after 2 x duration')
    })
  })
  await withServer({ clock, evictionIntervalTimerInMs: 50, defaultLeaseDurationMs: 300, leaseExpiryBug: false, selfPreservation: false }, async (s) => {
    await call('POST', `${s.url}/apps/orders`, { body: body('b') })
    await call('POST', `${s.url}/apps/orders`, { body: body('x', lease) })
    await clock.advance(400)
    // Registered together: b (no leaseInfo, 300 ms default) is gone while x's 1 s lease still holds.
    assert.deepEqual([await status(s, 'b'), await status(s, 'x')], [404, 200], 'defaultLeaseDurationMs applies without leaseInfo')
  })
  await withServer({ clock, evictionIntervalTimerInMs: 50, leaseExpiryBug: false }, async (s) => {
    await call('POST', `${s.url}/apps/orders`, { body: body('c', lease) })
    await clock.advance(1_300)
    assert.equal(s.snapshot().length, 1, 'self-preservation (on by default): no renews measured, so nothing expires')
    assert.equal(await status(s, 'c'), 200)
  })
})

test('options are validated with errors that name the option', async () => {
  await assert.rejects(startEureka({ responseCacheUpdateIntervalMs: -1 }), /responseCacheUpdateIntervalMs: must be a positive number of milliseconds, got number -1/)
  await assert.rejects(startEureka({ evictionIntervalTimerInMs: 0 }), /evictionIntervalTimerInMs: must be a positive number of milliseconds/, 'a timer period of 0 would spin')
  await assert.rejects(startEureka({ renewalPercentThreshold: 2 }), /renewalPercentThreshold: must be a number from 0 to 1 \(Eureka's default is 0\.85\), got number 2/)
  await assert.rejects(startEureka({ peerUrls: ['ftp://127.0.0.1:1/eureka'] }), /peerUrls\[0\]: must be an http:\/\/ or https:\/\/ URL/)
  await assert.rejects(startEureka({ clock: {} as never }), /clock: must be a Clock .* its now\(\) is missing/)
  await assert.rejects(startEureka({ port: 70_000 }), /port: must be an integer/)
  await assert.rejects(startEureka({ useReadOnlyCache: 'no' as unknown as boolean }), /useReadOnlyCache: must be true or false/)
  await assert.rejects(startEureka({ cacheMs: 1 } as never), /cacheMs: unknown option/)
  await assert.rejects(startEureka({ disableDleta: true } as never), /disableDleta: unknown option \(did you mean 'disableDelta'\?\)/)
})
