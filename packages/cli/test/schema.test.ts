// Every manifest under examples/k8s and every one `lameduck plan` writes is valid
// for the Kubernetes 1.34 API (its published OpenAPI document) and, for Istio,
// Gateway API and Envoy Gateway resources, their CRD schemas (fixtures, sources
// in test/fixtures/schemas/README.md).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { parseAllDocuments } from 'yaml'
import { plan } from '../src/commands/plan.ts'
import { validateObject } from './schema/validate.ts'
import { runCommand } from './helpers.ts'

const EXAMPLES = fileURLToPath(new URL('../../../examples/k8s/', import.meta.url))

const docsOf = (text: string): Array<Record<string, any>> => parseAllDocuments(text).map((d) => d.toJS() as Record<string, any>).filter((d) => d !== null)

const errorsOf = (o: Record<string, any>): string[] => validateObject(o).map((e) => `${String(o.kind)}/${String(o.metadata?.name)} ${e.path}: ${e.message}`)

for (const file of readdirSync(EXAMPLES).filter((f) => f.endsWith('.yaml')).sort()) {
  test(`examples/k8s/${file}: every document is valid for Kubernetes 1.34 and its CRDs`, () => {
    const docs = docsOf(readFileSync(`${EXAMPLES}${file}`, 'utf8'))
    assert.ok(docs.length > 0)
    assert.deepEqual(docs.flatMap(errorsOf), [])
  })
}

// The flag sets plan is tested with; each patch is merged into a Deployment the way
// `kubectl patch --type strategic` would for these fields.
const PLANS: string[][] = [
  ['--windows', 'eureka-ribbon'],
  ['--windows', 'nacos', '--sidecar', 'istio'],
  ['--windows', 'nacos', '--sidecar', 'istio', '--istio-version', '1.26'],
  ['--windows', 'kubernetes', '--sidecar', 'native', '--envoy-drain-strategy', 'immediate'],
  ['--windows', 'kubernetes', '--no-cli'],
  ['--windows', 'kubernetes', '--no-cli', '--kubernetes-version', '1.30'],
  ['--windows', 'kubernetes', '--ambient', '--warmup-ms', '30000', '--resources'],
  ['--windows', 'eureka-spring', '--warmup-ms', '45500', '--resources', '--name', 'billing'],
  ['--windows', 'none', '--resources']
]

for (const args of PLANS) {
  test(`lameduck plan ${args.join(' ')}: the patch in a Deployment and every resource are valid`, async () => {
    const run = await runCommand(plan, args)
    const [patch, ...resources] = docsOf(run.stdout)
    const template = patch!.spec.template
    for (const c of [...template.spec.containers, ...(template.spec.initContainers ?? [])]) c.image ??= 'registry.example.com/orders:1.0.0'
    template.metadata.labels = { app: 'orders' }
    const deployment = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'orders' }, spec: { ...patch!.spec, selector: { matchLabels: { app: 'orders' } }, template } }
    assert.deepEqual(errorsOf(deployment), [])
    assert.equal(resources.length, args.includes('--resources') ? (args.includes('--warmup-ms') ? 3 : 1) : 0)
    assert.deepEqual(resources.flatMap(errorsOf), [])
  })
}

test('the validator rejects what the API server rejects (so a green run means something)', () => {
  const deployment = (container: Record<string, unknown>, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'orders' },
    spec: { selector: { matchLabels: { app: 'orders' } }, template: { metadata: { labels: { app: 'orders' } }, spec: { containers: [{ name: 'app', image: 'x', ...container }] } }, ...extra }
  })
  assert.deepEqual(validateObject(deployment({ lifecycle: { preStop: { sleep: { seconds: 15 } } } })), [])
  assert.match(JSON.stringify(validateObject(deployment({ lifecycle: { preStop: { sleep: { second: 15 } } } }))), /second: unknown field|"path":"\.spec\.template\.spec\.containers\[0\]\.lifecycle\.preStop\.sleep\.second"/)
  assert.match(JSON.stringify(validateObject(deployment({ lifecycle: { preStop: { sleep: { seconds: '15' } } } }))), /expected integer, got string/)
  assert.match(JSON.stringify(validateObject(deployment({}, { minReadySeconds: 1.5 }))), /expected integer, got number/)
  assert.match(JSON.stringify(validateObject(deployment({ name: undefined }))), /required/)
  assert.match(JSON.stringify(validateObject(deployment({ readinessProbe: { httpGet: { port: true } } }))), /integer or a string/)
  assert.match(JSON.stringify(validateObject({ apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'x', labels: { a: 1 } }, spec: {} })), /expected string, got integer/)
  // CRDs: Istio's warmupDurationSecs is a duration string; Envoy Gateway's slowStart needs a window.
  const dr = (lb: Record<string, unknown>): Record<string, unknown> => ({ apiVersion: 'networking.istio.io/v1', kind: 'DestinationRule', metadata: { name: 'x' }, spec: { host: 'x', trafficPolicy: { loadBalancer: lb } } })
  assert.deepEqual(validateObject(dr({ simple: 'LEAST_REQUEST', warmupDurationSecs: '30s' })), [])
  assert.notDeepEqual(validateObject(dr({ simple: 'LEAST_REQUEST', warmupDurationSecs: 30 })), [])
  assert.notDeepEqual(validateObject(dr({ simple: 'FASTEST' })), [])
  const btp = (lb: Record<string, unknown>): Record<string, unknown> => ({ apiVersion: 'gateway.envoyproxy.io/v1alpha1', kind: 'BackendTrafficPolicy', metadata: { name: 'x' }, spec: { targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: 'x' }], loadBalancer: lb } })
  assert.deepEqual(validateObject(btp({ type: 'RoundRobin', slowStart: { window: '30s' } })), [])
  assert.match(JSON.stringify(validateObject(btp({ type: 'RoundRobin', slowStart: {} }))), /slowStart\.window","message":"required"/)
  assert.notDeepEqual(validateObject(btp({ type: 'RoundRobin', slowStart: { window: '30 seconds' } })), [])
  assert.match(JSON.stringify(validateObject({ apiVersion: 'gateway.networking.k8s.io/v1', kind: 'HTTPRoute', metadata: { name: 'x', annotations: { a: 'b' } }, spec: { rules: [{ backendRefs: [{ name: 'x', port: 80, weight: 'heavy' }] }] } })), /weight/)
  assert.match(JSON.stringify(validateObject({ apiVersion: 'example.com/v1', kind: 'Widget' })), /no schema for example\.com\/v1 Widget/)
})
