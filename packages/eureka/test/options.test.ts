import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { InvalidOptionError, propagationWindow, WINDOW_PRESETS } from '@lameduck/core'
import { startEureka } from '@lameduck/devkit'
import { eurekaDiscovery, eurekaRegistry, eurekaWindows, type EurekaRegistryOptions } from '@lameduck/eureka'

const url = 'http://127.0.0.1:8761/eureka'

test('bad options fail at construction with the option name and the fix', () => {
  const cases: Array<[unknown, RegExp]> = [
    [undefined, /^eurekaRegistry: options must be an object/],
    [{}, /^url: must be the Eureka base URL/],
    [{ url: 'eureka:8761' }, /^url: 'eureka:8761' must use http or https/],
    [{ url: `${url}/apps/` }, /^url: .* points at the apps resource; give the Eureka base instead, e\.g\. 'http:\/\/127\.0\.0\.1:8761\/eureka'/],
    [{ url: [] }, /^url: /],
    [{ url, offlineMode: 'oos' }, /^offlineMode: must be 'delete' .* or 'out-of-service'/],
    [{ url, client: { shouldUseDelta: true } }, /^client\.shouldUseDelta: delta fetches corrupt/],
    [{ url, client: { eureka: { serviceUrls: { default: [url] } } } }, /^client\.eureka\.serviceUrls: is set by lameduck: list the Eureka servers in `url`/],
    [{ url, client: { eureka: { servicePath: '/eureka/apps/' } } }, /^client\.eureka\.servicePath: /],
    [{ url, client: { instance: { app: 'X' } } }, /^client\.instance\.app: comes from the lameduck instance/],
    [{ url, client: { logger: console } }, /^client\.logger: pass a pino-compatible logger as the top-level `logger`/],
    [{ url, client: { eureka: { heartbeatInterval: -5 } } }, /^client\.eureka\.heartbeatInterval: must be a positive number of milliseconds, got number -5/],
    [{ url, leaseDurationSecs: 20 }, /^leaseDurationSecs: 20 s would let the lease expire between heartbeats \(client\.eureka\.heartbeatInterval is 30000 ms\)/],
    [{ url, leaseDurationSecs: 1.5 }, /^leaseDurationSecs: must be a whole number/],
    [{ url, registerTimeoutMs: 0 }, /^registerTimeoutMs: must be a positive number of milliseconds, got number 0/],
    // Named as written in eurekaRegistry() (windows.*), and computed once there.
    [{ url, windows: { balancer: 'zuul' } }, /^windows\.balancer: must be 'ribbon', 'spring', 'none' or a refresh interval in ms, got 'zuul'$/],
    [{ url, windows: { clientFetchMS: 1 } }, /^windows\.clientFetchMS: unknown option \(did you mean 'clientFetchMs'\?\)/],
    [{ url, windows: 5 }, /^windows: must be an object like/],
    [{ url, heartbeat: 1 }, /^heartbeat: unknown option; known options are url, .* \(options of eurekaRegistry\(\)\)$/]
  ]
  for (const [options, message] of cases) {
    assert.throws(() => eurekaRegistry(options as EurekaRegistryOptions), (err: unknown) => err instanceof InvalidOptionError && message.test(err.message), String(message))
  }
  assert.throws(() => eurekaDiscovery({ url, offlineMode: 'delete' } as never), /offlineMode: unknown option; .* \(options of eurekaDiscovery\(\)\)/)
})

test('eurekaWindows: the defaults are the core presets; parts follow the configured intervals and can be overridden', () => {
  assert.deepEqual(eurekaWindows(), WINDOW_PRESETS['eureka-ribbon'])
  assert.deepEqual(eurekaWindows({ balancer: 'spring' }), WINDOW_PRESETS['eureka-spring'])
  assert.deepEqual(eurekaWindows({ balancer: 'none' }), WINDOW_PRESETS['eureka-node'])
  const scaled = eurekaWindows({ responseCacheUpdateIntervalMs: 300, registryFetchIntervalMs: 300, balancer: 'none', marginMs: 100 })
  assert.equal(propagationWindow(scaled).totalMs, 700)
  assert.equal(eurekaWindows({ useReadOnlyCache: false }).serverCacheMs, 0, 'no read-only cache, no server-cache term')
  assert.equal(eurekaWindows({ balancer: 12_000, clientFetchMs: 5_000 }).balancerRefreshMs, 12_000)
  assert.equal(eurekaWindows({ clientFetchMs: 5_000 }).clientFetchMs, 5_000, 'core part names override')
  assert.throws(() => eurekaWindows({ cache: 1 } as never), /eurekaWindows\.cache: unknown option/)

  const registry = eurekaRegistry({ url, client: { eureka: { registryFetchInterval: 10_000 } }, windows: { balancer: 'spring' } })
  assert.deepEqual(registry.windows, { ...WINDOW_PRESETS['eureka-spring'], clientFetchMs: 10_000 }, 'registry.windows uses its own fetch interval for consumers')
  assert.equal(propagationWindow(registry.windows).totalMs, 75_000)
})

test('nothing the adapter starts keeps the process alive', async () => {
  const s = await startEureka({ useReadOnlyCache: false })
  try {
    const root = fileURLToPath(new URL('../../../', import.meta.url))
    const script = `
      import { eurekaRegistry, eurekaDiscovery } from '@lameduck/eureka'
      const registry = eurekaRegistry({ url: process.argv[1], client: { eureka: { heartbeatInterval: 50, registryFetchInterval: 50 } } })
      await registry.register({ id: 'child-1', service: 'orders', host: '127.0.0.1', port: 3001, status: 'UP', metadata: {} })
      await registry.ready()
      const discovery = eurekaDiscovery({ url: process.argv[1] })
      await discovery.ready()
      console.log('seen', registry.instances('orders').length, discovery.instances('orders').length)
      // no close(): heartbeats and fetches must not hold the event loop
    `
    const child = spawn(process.execPath, ['--conditions=@lameduck/source', '--input-type=module', '-e', script, '--', s.url], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (d: Buffer) => { out += d.toString() })
    child.stderr.on('data', (d: Buffer) => { err += d.toString() })
    // A hang's deadline, not a speed bound: a starved machine takes seconds to load the child.
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve))
    clearTimeout(timer)
    assert.equal(code, 0, `the child should exit by itself (stderr: ${err})`)
    assert.match(out, /seen 1 1/)
    assert.equal(err, '', 'eureka-js-client printed nothing to the console')
  } finally {
    await s.close()
  }
})

test('eurekaWindows({ peers }): a consumer fetching from another peer sees a change one replication batch later', () => {
  assert.equal(eurekaWindows({ peers: true }).replicationMs, 500 + 900, 'the batch, then two tries of the request (200 + 200 ms timeouts, 100 ms apart)')
  assert.equal(eurekaWindows({ peers: 3, replicationBatchMs: 200 }).replicationMs, 200 + 900)
  assert.equal(eurekaWindows({ peers: 2, replicationRequestMs: 0 }).replicationMs, 500)
  assert.equal(eurekaWindows({ peers: 1 }).replicationMs, 0, 'one server replicates to nobody')
  assert.equal(eurekaWindows().replicationMs, 0)
  assert.throws(() => eurekaWindows({ peers: 0 }), /eurekaWindows\.peers: must be true, false or the server count/)
  assert.throws(() => eurekaWindows({ replicationBatchMs: -1 }), /eurekaWindows\.replicationBatchMs/)
  assert.throws(() => eurekaWindows({ replicationRequestMs: -1 }), /eurekaWindows\.replicationRequestMs/)
})
