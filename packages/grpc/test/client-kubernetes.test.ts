// lameduckResolver over kubernetesDiscovery (a Service's EndpointSlices, here from the
// kubernetes package's stand-in API server): the client calls the ready endpoints and
// stops calling one at the watch event that marks it terminating, so its end loses nothing.
// The negative control (a static target keeps calling a leaving instance) is in
// client-resolver.test.ts.
import { after, test } from 'node:test'
import assert from 'node:assert/strict'
import * as grpc from '@grpc/grpc-js'
import { until } from '@lameduck/test-utils'
import { kubernetesDiscovery } from '../../kubernetes/src/index.ts'
import { endpoint, fakeApi, slice } from '../../kubernetes/test/fake-api.ts'
import { lameduckResolver } from '../src/client/index.ts'
import { load, startServer, WorkClient, type TestServer } from './client-helpers.ts'

const closers: Array<() => unknown> = []
after(async () => { for (const c of closers.reverse()) await c() })

/** One EndpointSlice per server: each its own port (the servers share 127.0.0.1). */
const sliceOf = (s: TestServer, conditions?: Record<string, unknown>, rv = '1'): Record<string, unknown> =>
  slice(`orders-${s.name}`, [endpoint('127.0.0.1', conditions, `pod-${s.name}`)], [{ name: 'grpc', port: s.port, protocol: 'TCP' }], rv)

test('kubernetesDiscovery: calls go to the ready endpoints; a terminating one is no longer called, and its end loses nothing', async () => {
  const [a, b] = await Promise.all([startServer('a'), startServer('b')])
  closers.push(() => { a.forceShutdown(); b.forceShutdown() })
  const api = await fakeApi()
  closers.push(() => api.close())
  api.slices = [sliceOf(a), sliceOf(b)]
  const discovery = kubernetesDiscovery({ kubeconfig: api.kubeconfig, service: 'orders', backoff: { initialMs: 20, maxMs: 100 } })
  closers.push(() => discovery.close())
  const resolver = lameduckResolver({ discovery })
  closers.push(() => resolver.close())
  const client = new WorkClient(resolver.target('orders'), grpc.credentials.createInsecure())
  closers.push(() => client.close())
  const traffic = load(client, 8, 20)
  await until(() => a.calls > 10 && b.calls > 10, 'calls on both endpoints')
  await until(() => api.watches >= 1, 'the watch')
  api.event('MODIFIED', sliceOf(a, { ready: false, serving: true, terminating: true }, '2'))
  const bAt = b.calls
  await until(() => a.inFlight === 0 && b.calls > bAt + 50, 'a idle while b takes the calls')
  const aAt = a.calls
  a.forceShutdown()
  await until(() => b.calls > bAt + 150, 'calls after a ended')
  await traffic.stop()
  assert.equal(a.calls, aAt, 'nothing reached a after it went idle')
  assert.equal(traffic.failed, 0, traffic.errors.join('\n'))
})
