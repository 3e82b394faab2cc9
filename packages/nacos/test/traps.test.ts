// The nacos SDK's traps the adapter works around: 20404 beats after a server
// restart, the late first beat, close() keeping the process alive.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import { startNacos, type BeatEvent } from '@lameduck/devkit'
import { nacosRegistry } from '@lameduck/nacos'
import { captureLogger, instance, sdkClient, waitFor } from './helpers.ts'

test('server restarted without the instance: the beat gets 20404 and the adapter registers it again', async (t) => {
  // beatReregister: false is a server that does not re-register from the beat body
  // (the SDK ignores the code, so without the adapter the instance stays gone).
  const options = { beatReregister: false, clientBeatIntervalMs: 150 }
  let server = await startNacos(options)
  const port = server.port
  const logger = captureLogger()
  const registry = nacosRegistry({ serverList: server.serverList, beatIntervalMs: 150, logger })
  t.after(async () => { await registry.close(); await server.close() })
  const orders = instance(3000, { weight: 30, metadata: { version: '7' } })
  await registry.register(orders)
  await server.close()

  server = await startNacos({ ...options, port })
  const beats: BeatEvent[] = []
  server.events.on('beat', (b) => beats.push(b))
  const [back] = await waitFor('the instance to be registered again', () => server.instances('orders').length === 1 && server.instances('orders'), 3_000)
  assert.deepEqual({ weight: back!.weight, metadata: back!.metadata, enabled: back!.enabled }, { weight: 30, metadata: orders.metadata, enabled: true }, 'registered with everything, not just what a beat carries')
  await waitFor('a normal beat', () => beats.some((b) => b.code === 10200))
  const [described] = registry.describe().registered as Array<{ beats: { reRegistrations: number } }>
  assert.equal(described!.beats.reRegistrations, 1)
  assert.ok(logger.entries.some((e) => e.level === 'warn' && /beat answered 20404/.test(e.msg)))
})

test('server restarted with data compensation: the full beat brings the instance back by itself', async (t) => {
  let server = await startNacos({ clientBeatIntervalMs: 150 })
  const port = server.port
  const registry = nacosRegistry({ serverList: server.serverList, beatIntervalMs: 150 })
  t.after(async () => { await registry.close(); await server.close() })
  const orders = instance(3000, { weight: 30, metadata: { version: '7' } })
  await registry.register(orders)
  await server.close()
  server = await startNacos({ clientBeatIntervalMs: 150, port })
  const [back] = await waitFor('the instance back from its beat', () => server.instances('orders').length === 1 && server.instances('orders'), 3_000)
  assert.deepEqual({ weight: back!.weight, metadata: back!.metadata }, { weight: 30, metadata: orders.metadata }, 'the beat carries weight and metadata')
})

test('the first beat is not late: on a server with a 1 s heartbeat timeout the adapter\'s instance stays healthy, the SDK\'s does not', async (t) => {
  const server = await startNacos({ heartBeatTimeoutMs: 1_000, ipDeleteTimeoutMs: 60_000, checkIntervalMs: 50, clientBeatIntervalMs: 300, protectThreshold: false })
  const registry = nacosRegistry({ serverList: server.serverList, beatIntervalMs: 300 })
  const sdk = await sdkClient(server.serverList)
  t.after(async () => { await registry.close(); await sdk.close(); await server.close() })
  const beats: BeatEvent[] = []
  server.events.on('beat', (b) => beats.push(b))

  await registry.register(instance(3000))
  await sdk.registerInstance('orders', { ip: '127.0.0.1', port: 3001 })
  await waitFor('the SDK\'s instance to turn unhealthy', () => server.instances('orders').find((i) => i.port === 3001)?.healthy === false, 3_000)
  assert.equal(server.instances('orders').find((i) => i.port === 3000)?.healthy, true)
  assert.ok(beats.filter((b) => b.port === 3000).length >= 2, 'the adapter beat in time')
  assert.equal(beats.filter((b) => b.port === 3001).length, 0, 'the SDK has not sent its first beat yet (it waits ~10 s)')
})

test('close() does not keep the process alive (the SDK alone keeps it up for its beat sleep)', async (t) => {
  const server = await startNacos()
  t.after(() => server.close())
  const root = fileURLToPath(new URL('../../../', import.meta.url))
  const run = async (code: string): Promise<number> => {
    const child = spawn(process.execPath, ['--conditions=@lameduck/source', '--input-type=module', '-e', code], { cwd: root, env: { ...process.env, NACOS: server.serverList }, stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.on('data', (c: Buffer) => { out += c.toString() })
    const [exit] = await once(child, 'exit') as [number | null]
    assert.equal(exit, 0, out)
    const closedAt = Number(/closed at (\d+)/.exec(out)?.[1])
    return Date.now() - closedAt
  }
  const [adapterMs, sdkMs] = await Promise.all([
    run(`import { nacosRegistry } from '@lameduck/nacos'
      const r = nacosRegistry({ serverList: process.env.NACOS })
      await r.register({ id: 'x', service: 'close-test', host: '127.0.0.1', port: 4000, status: 'UP', metadata: {} })
      r.subscribe('close-test', () => {})
      await r.load('close-test')
      await r.close()
      console.log('closed at', Date.now())`),
    run(`import { NacosNamingClient } from 'nacos'
      const q = () => {}
      const c = new NacosNamingClient({ logger: { info: q, warn: q, error: q, debug: q }, serverList: process.env.NACOS })
      await c.ready()
      await c.registerInstance('close-test', { ip: '127.0.0.1', port: 4001 })
      c.subscribe('close-test', () => {})
      await c.getAllInstances('close-test')
      await c.deregisterInstance('close-test', { ip: '127.0.0.1', port: 4001 })
      await c.close()
      console.log('closed at', Date.now())`)
  ])
  t.diagnostic(`process exit after close(): adapter ${adapterMs} ms, SDK alone ${sdkMs} ms`)
  assert.ok(adapterMs < sdkMs, `the adapter's process exited (${adapterMs} ms after close()) before the SDK's alone (${sdkMs} ms)`)
  assert.ok(sdkMs > 3_000, `the SDK's process lingered ${sdkMs} ms (its beat loop sleeps 10 s)`)
  assert.equal(server.instances('close-test').length, 0)
})
