import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { until } from '@lameduck/test-utils'
import { inClusterConnection, kubeconfigConnection, kubernetesDiscovery } from '@lameduck/kubernetes'
import { endpoint, fakeApi, slice } from './fake-api.ts'

const closers: Array<() => unknown> = []
after(async () => { for (const c of closers.reverse()) await c() })

test('in-cluster: the service host and port (IPv6 bracketed), the CA, the namespace and the token file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'lameduck-sa-'))
  writeFileSync(join(dir, 'ca.crt'), 'CA')
  writeFileSync(join(dir, 'namespace'), 'shop\n')
  writeFileSync(join(dir, 'token'), 'token-1\n')
  const conn = inClusterConnection(dir, { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' })
  assert.equal(conn.server.origin, 'https://[fd00::1]')
  assert.equal(conn.namespace, 'shop')
  assert.equal(conn.token(), 'token-1')
  assert.equal(conn.ca?.toString(), 'CA')
  assert.throws(() => inClusterConnection(dir, {}), { code: 'LAMEDUCK_ERR_K8S_CONFIG' })
  assert.throws(() => inClusterConnection(join(dir, 'nope'), { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' }), /ca\.crt/)
})

test('a rotated token file is read again after the API answers 401', async () => {
  const api = await fakeApi()
  closers.push(() => api.close())
  const dir = mkdtempSync(join(tmpdir(), 'lameduck-token-'))
  writeFileSync(join(dir, 'token'), 'old')
  const kubeconfig = join(dir, 'kubeconfig')
  writeFileSync(kubeconfig, JSON.stringify({
    'current-context': 'c',
    clusters: [{ name: 'k', cluster: { server: api.url } }],
    users: [{ name: 'u', user: { tokenFile: 'token' } }],
    contexts: [{ name: 'c', context: { cluster: 'k', user: 'u', namespace: 'shop' } }]
  }))
  api.slices = [slice('orders-a', [endpoint('10.0.0.1')])]
  api.acceptToken = 'old'
  const d = kubernetesDiscovery({ kubeconfig, service: 'orders', backoff: { initialMs: 20, maxMs: 50 } })
  closers.push(() => d.close())
  await d.ready()
  await until(() => api.watches === 1, 'the watch')
  // The kubelet rotates the token; the server stops taking the old one.
  writeFileSync(join(dir, 'token'), 'new\n')
  api.acceptToken = 'new'
  api.endWatches()
  await until(() => api.watches === 1 && api.tokens.at(-1) === 'new', 'a watch with the new token')
  assert.ok(api.tokens.includes('old'))
})

test('kubeconfig: a context by name, relative certificate paths, and exec users refused', () => {
  const dir = mkdtempSync(join(tmpdir(), 'lameduck-kc-'))
  writeFileSync(join(dir, 'ca.pem'), 'CA')
  const path = join(dir, 'config')
  writeFileSync(path, [
    'apiVersion: v1',
    'current-context: a',
    'clusters:',
    '- name: k',
    '  cluster: { server: "https://10.0.0.1:6443", certificate-authority: ca.pem }',
    'users:',
    '- { name: t, user: { token: abc } }',
    '- { name: e, user: { exec: { command: aws } } }',
    'contexts:',
    '- { name: a, context: { cluster: k, user: t } }',
    '- { name: b, context: { cluster: k, user: e, namespace: shop } }',
    ''
  ].join('\n'))
  const conn = kubeconfigConnection(path)
  assert.equal(conn.server.host, '10.0.0.1:6443')
  assert.equal(conn.ca?.toString(), 'CA')
  assert.equal(conn.token(), 'abc')
  assert.equal(conn.namespace, undefined)
  assert.throws(() => kubeconfigConnection(path, 'b'), /exec plugin, which lameduck does not run/)
  assert.throws(() => kubeconfigConnection(path, 'zz'), /no context named 'zz'/)
})

test('lameduck.dev/registered-at: ms since the epoch or RFC 3339; anything else is unreadable', async () => {
  const { readRegisteredAt } = await import('../src/pod-annotations.ts')
  assert.equal(readRegisteredAt('1795314607367'), 1795314607367)
  assert.equal(readRegisteredAt('2026-11-27T13:00:00Z'), Date.parse('2026-11-27T13:00:00Z'))
  for (const bad of ['', 'soon', '-5', '0', 42, 'x'.repeat(100)]) assert.equal(readRegisteredAt(bad), undefined, String(bad))
})

test('podConditionWriter checks its options at the edge', async () => {
  const { podConditionWriter } = await import('@lameduck/kubernetes')
  const api = await fakeApi()
  closers.push(() => api.close())
  const w = podConditionWriter({ kubeconfig: api.kubeconfig, pod: 'orders-1' })
  closers.push(() => w.close())
  assert.equal(w.namespace, 'shop')
  assert.equal(w.conditionType, 'lameduck.dev/registered')
  assert.throws(() => podConditionWriter({ kubeconfig: api.kubeconfig, pod: 'x', conditionType: 'not a type!' }), { code: 'LAMEDUCK_ERR_INVALID_OPTION' })
  assert.throws(() => podConditionWriter({ kubeconfig: api.kubeconfig, pod: 'Bad_Pod' }), /pod/)
  assert.throws(() => podConditionWriter({ kubeconfig: api.kubeconfig, podName: 'x' } as never), /unknown option/)
})
