// Unit tests of discovery's cache rules, fed ServiceInfo bodies directly (the
// end-to-end behaviour is in discovery.test.ts).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { Instance } from '@lameduck/core'
import type { SdkBridge, UpdateSource } from '../src/sdk-bridge.ts'
import type { ServiceInfoData } from '../src/sdk-types.ts'
import { ServiceCache } from '../src/service-cache.ts'
import { captureLogger } from './helpers.ts'

function setup (): { cache: ServiceCache, feed: (data: ServiceInfoData, source?: UpdateSource) => void, subscribed: unknown[] } {
  let listener: ((data: ServiceInfoData, source: UpdateSource) => void) | undefined
  const subscribed: unknown[] = []
  const bridge = {
    client: { subscribe: (info: unknown) => { subscribed.push(info) }, unSubscribe: () => {} },
    ownBeats: true,
    observing: true,
    ready: async () => {},
    sendBeat: async () => ({ code: 10200, clientBeatInterval: 5000 }),
    onServiceInfo: (fn: typeof listener) => { listener = fn },
    udpPort: () => 4321,
    close: async () => {}
  } as unknown as SdkBridge
  const cache = new ServiceCache({ bridge, group: 'DEFAULT_GROUP', clusters: 'DEFAULT', logger: captureLogger() })
  return { cache, feed: (data, source = 'poll') => listener!(data, source), subscribed }
}

const host = (port: number, extra: Record<string, unknown> = {}): any => ({ ip: '10.0.0.1', port, weight: 1, healthy: true, enabled: true, metadata: {}, ...extra })
const info = (hosts: unknown, lastRefTime: number, extra: Partial<ServiceInfoData> = {}): ServiceInfoData =>
  ({ name: 'DEFAULT_GROUP@@orders', clusters: 'DEFAULT', cacheMillis: 10_000, hosts: hosts as ServiceInfoData['hosts'], lastRefTime, ...extra })
const ports = (list: Instance[]): number[] => list.map((i) => i.port)

test('routable hosts only, metadata as strings, one SDK subscription per service', async () => {
  const { cache, feed, subscribed } = setup()
  const lists: Instance[][] = []
  cache.subscribe('orders', (l) => lists.push(l))
  cache.instances('Orders')
  await new Promise((resolve) => setImmediate(resolve))
  assert.deepEqual(subscribed, [{ serviceName: 'orders', groupName: 'DEFAULT_GROUP', clusters: 'DEFAULT' }])
  feed(info([host(1), host(2, { healthy: false }), host(3, { enabled: false }), host(4, { weight: 0 }), host(5, { metadata: { n: 1, s: 'x' } })], 100))
  assert.deepEqual(ports(cache.instances('orders')), [1, 5])
  assert.deepEqual(cache.instances('orders')[1]!.metadata, { n: '1', s: 'x' })
  assert.equal(lists.length, 1)
})

test('empty lists are applied, null hosts are not information, other keys are ignored', () => {
  const { cache, feed } = setup()
  cache.instances('orders')
  feed(info([host(1)], 100))
  feed(info(null, 200))
  assert.deepEqual(ports(cache.instances('orders')), [1])
  feed(info([], 300, { clusters: '' }))
  feed(info([], 300, { name: 'DEFAULT_GROUP@@billing' }))
  assert.deepEqual(ports(cache.instances('orders')), [1], 'another cache key is another service')
  feed(info([], 300), 'push')
  assert.deepEqual(cache.instances('orders'), [])
})

test('an answer made just before the one held is skipped; a much older one is clock skew and applied', () => {
  const { cache, feed } = setup()
  cache.instances('orders')
  feed(info([host(1), host(2)], 10_000), 'push')
  feed(info([host(1)], 9_500), 'poll')
  assert.deepEqual(ports(cache.instances('orders')), [1, 2], 'a poll answered 500 ms before the push is older news')
  feed(info([host(1)], 5_000), 'poll')
  assert.deepEqual(ports(cache.instances('orders')), [1], 'answers 5 s "older" come from a node with another clock')
  assert.deepEqual(cache.describe().updates, { pushes: 1, polls: 2, changesByPush: 0, changesByPoll: 1 })
})
