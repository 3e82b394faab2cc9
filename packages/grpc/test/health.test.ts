// grpc.health.v1 on the lifecycle, read by a client on the test's own protobuf codec
// (proto-loader): Check and Watch say NOT_SERVING until the instance is registered, SERVING
// while it serves, NOT_SERVING from the start of the drain (or, with readinessWhileDraining
// 'serve', once it is offline). Negative control: a static health service, as apps add one
// (SERVING from start to exit), keeps saying SERVING to the kubelet through the drain.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import * as grpc from '@grpc/grpc-js'
import { check, healthClient, NOT_SERVING, SECURITIES, SERVING, startGrpc, until } from './helpers.ts'
import { healthServiceDefinition } from '@lameduck/grpc'

const ECHO = 'lameduck.test.Echo'

for (const security of SECURITIES) {
  test(`${security}: Check and Watch follow the lifecycle, for the whole server and per service`, async (t) => {
    let ready = false
    const s = await startGrpc({ security, lameduck: { readiness: [() => ready] } })
    t.after(() => s.stop())
    const lameduck = s.lameduck!
    const health = healthClient(s)
    t.after(() => health.close())
    const watched: number[] = []
    const watch = health.Watch({ service: '' })
    watch.on('data', (r: { status: number }) => { watched.push(r.status) })
    const watchEnded = new Promise<grpc.StatusObject>((resolve) => { watch.on('status', resolve); watch.on('error', () => {}) })

    await until(() => lameduck.state === 'waiting', 'waiting for readiness')
    assert.equal((await check(health)).status, NOT_SERVING)
    assert.equal((await check(health, ECHO)).status, NOT_SERVING)
    await until(() => watched.length === 1, 'the first Watch answer')
    assert.deepEqual(watched, [NOT_SERVING])

    ready = true
    await until(() => lameduck.state === 'serving', 'serving')
    assert.equal((await check(health)).status, SERVING)
    assert.equal((await check(health, ECHO)).status, SERVING)
    assert.equal((await check(health, 'grpc.health.v1.Health')).status, SERVING)
    await until(() => watched.at(-1) === SERVING, 'Watch to say SERVING')

    const offline = lameduck.offline()
    await until(() => lameduck.state === 'draining', 'draining')
    // From the start of the drain: the kubelet's gRPC probe takes the pod out of the Service.
    assert.equal((await check(health)).status, NOT_SERVING)
    assert.equal((await check(health, ECHO)).status, NOT_SERVING)
    await until(() => watched.at(-1) === NOT_SERVING, 'Watch to say NOT_SERVING')
    await offline
    assert.deepEqual(watched, [NOT_SERVING, SERVING, NOT_SERVING], 'one answer per change')

    await assert.rejects(check(health, 'no.Such'), (err: grpc.ServiceError) => err.code === grpc.status.NOT_FOUND)
    await lameduck.shutdown()
    assert.equal((await watchEnded).code, grpc.status.OK, 'the Watch stream ends with the server')
  })
}

test("readinessWhileDraining 'serve': SERVING through the drain, NOT_SERVING once offline", async (t) => {
  const s = await startGrpc({ lameduck: { readinessWhileDraining: 'serve' } })
  t.after(() => s.stop())
  const lameduck = s.lameduck!
  const health = healthClient(s)
  t.after(() => health.close())
  await until(() => lameduck.state === 'serving', 'serving')
  const offline = lameduck.offline()
  await until(() => lameduck.state === 'draining', 'draining')
  assert.equal((await check(health)).status, SERVING)
  await offline
  assert.equal((await check(health)).status, NOT_SERVING)
})

test('the health service speaks the published protobuf: lameduck\'s own definition and proto-loader agree', async (t) => {
  const s = await startGrpc()
  t.after(() => s.stop())
  await until(() => s.lameduck!.state === 'serving', 'serving')
  const Own = grpc.makeGenericClientConstructor(healthServiceDefinition, 'Health')
  const own = new Own(s.target, grpc.credentials.createInsecure()) as grpc.Client & Record<string, any>
  t.after(() => own.close())
  assert.deepEqual(await check(own, ECHO), { status: SERVING })
  assert.deepEqual(await check(healthClient(s), ECHO), { status: SERVING })
})

test('negative control: a static health service says SERVING through the whole drain', async (t) => {
  const s = await startGrpc({ lameduck: { health: false } })
  t.after(() => s.stop())
  // What apps register without lameduck (grpc-health-check's default map): SERVING from start to exit.
  s.server.addService(healthServiceDefinition, {
    Check: (_call: unknown, cb: grpc.sendUnaryData<{ status: number }>) => { cb(null, { status: SERVING }) },
    Watch: (call: grpc.ServerWritableStream<unknown, { status: number }>) => { call.write({ status: SERVING }) }
  })
  const lameduck = s.lameduck!
  const health = healthClient(s)
  t.after(() => health.close())
  await until(() => lameduck.state === 'serving', 'serving')
  const offline = lameduck.offline()
  await until(() => lameduck.state === 'draining', 'draining')
  assert.equal((await check(health)).status, SERVING, 'the kubelet keeps the pod in the Service while it drains')
  await offline
})
