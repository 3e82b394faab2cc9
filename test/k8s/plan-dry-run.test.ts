// What `lameduck plan` writes, and the Istio, Gateway API and Envoy Gateway objects of
// examples/k8s, are accepted by a real API server (v1.34): a server-side apply as a dry run
// with strict field validation. The CRDs are installed from the schema fixtures the CLI's
// offline validator uses (packages/cli/test/fixtures/schemas, sources in its README), so both
// checks read the same published schemas.
import assert from 'node:assert/strict'
import { globSync, readFileSync } from 'node:fs'
import { after, before, describe, test } from 'node:test'
import { parseAllDocuments } from 'yaml'
import { plan } from '../../packages/cli/src/commands/plan.ts'
import { runCommand } from '../../packages/cli/test/helpers.ts'
import { skipReason, startControlPlane, type ControlPlane } from './helpers/control-plane.ts'

const reason = skipReason()
const NAMESPACE = 'plans'
const CRDS = JSON.parse(readFileSync('packages/cli/test/fixtures/schemas/crds.json', 'utf8')) as Record<string, { schema: Record<string, unknown> }>
const PLURAL: Record<string, string> = { DestinationRule: 'destinationrules', HTTPRoute: 'httproutes', GRPCRoute: 'grpcroutes', Gateway: 'gateways', BackendTrafficPolicy: 'backendtrafficpolicies', EnvoyProxy: 'envoyproxies' }

/** One CRD per group/kind from the fixtures: every version served, the first stored. */
function crdObjects (): Array<Record<string, unknown>> {
  const byKind = new Map<string, { group: string, kind: string, versions: Array<{ name: string, schema: unknown }> }>()
  for (const [key, { schema }] of Object.entries(CRDS)) {
    const [group, version, kind] = key.split('/') as [string, string, string]
    const entry = byKind.get(`${group}/${kind}`) ?? { group, kind, versions: [] }
    entry.versions.push({ name: version, schema })
    byKind.set(`${group}/${kind}`, entry)
  }
  return [...byKind.values()].map(({ group, kind, versions }) => ({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    // Groups under k8s.io need this annotation; Gateway API's own CRDs carry the same.
    metadata: { name: `${PLURAL[kind]!}.${group}`, ...(group.endsWith('.k8s.io') ? { annotations: { 'api-approved.kubernetes.io': 'https://github.com/kubernetes-sigs/gateway-api/pull/3328' } } : {}) },
    spec: {
      group,
      scope: 'Namespaced',
      names: { kind, plural: PLURAL[kind], singular: kind.toLowerCase(), listKind: `${kind}List` },
      versions: versions.map((v, i) => ({ name: v.name, served: true, storage: i === 0, schema: { openAPIV3Schema: v.schema } }))
    }
  }))
}

const PLANS: string[][] = [
  ['--windows', 'eureka-ribbon'],
  ['--windows', 'nacos', '--sidecar', 'istio'],
  ['--windows', 'nacos', '--sidecar', 'istio', '--istio-version', '1.26'],
  ['--windows', 'kubernetes', '--sidecar', 'native', '--envoy-drain-strategy', 'immediate'],
  ['--windows', 'kubernetes', '--no-cli'],
  ['--windows', 'kubernetes', '--ambient', '--warmup-ms', '30000', '--resources'],
  ['--windows', 'eureka-spring', '--warmup-ms', '45500', '--resources', '--name', 'billing'],
  // @lameduck/kubernetes: readinessGates, the downward-API env, a ServiceAccount, Role and RoleBinding
  ['--windows', 'kubernetes', '--observed-window', '--readiness-gate', '--gate-warmup-fraction', '0.5', '--warmup-ms', '60000', '--resources'],
  ['--windows', 'nacos', '--readiness-gate', '--sidecar', 'istio', '--service-account', 'orders']
]

describe('lameduck plan output and the examples\' CRD objects on a real API server (server-side dry run)', { skip: reason ?? false }, () => {
  let cp: ControlPlane
  const apply = async (doc: Record<string, any>, plural: string): Promise<{ status: number, body: any }> => {
    const apiVersion = String(doc.apiVersion)
    const base = `/${apiVersion.includes('/') ? 'apis' : 'api'}/${apiVersion}`
    const path = `${base}/namespaces/${NAMESPACE}/${plural}/${String(doc.metadata?.name)}`
    return await cp.api('PATCH', `${path}?dryRun=All&fieldManager=lameduck-test&fieldValidation=Strict`, { ...doc, metadata: { ...doc.metadata, namespace: NAMESPACE } }, 'admin', 'application/apply-patch+yaml')
  }
  const PLURALS: Record<string, string> = { Deployment: 'deployments', PodDisruptionBudget: 'poddisruptionbudgets', Service: 'services', ServiceAccount: 'serviceaccounts', Role: 'roles', RoleBinding: 'rolebindings', ...PLURAL }

  before(async () => {
    cp = await startControlPlane()
    assert.equal((await cp.api('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } })).status, 201)
    for (const crd of crdObjects()) {
      const res = await cp.api('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd)
      assert.equal(res.status, 201, `${String((crd.metadata as { name: string }).name)}: ${JSON.stringify(res.body?.message ?? res.body).slice(0, 800)}`)
    }
    // Established: the new resources are served.
    for (const crd of crdObjects()) {
      const name = (crd.metadata as { name: string }).name
      for (let i = 0; ; i++) {
        const res = await cp.api('GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`)
        if ((res.body?.status?.conditions ?? []).some((c: { type: string, status: string }) => c.type === 'Established' && c.status === 'True')) break
        assert.ok(i < 200, `${name} never established`)
        await new Promise((resolve) => setImmediate(resolve))
      }
    }
  }, { timeout: 180_000 })
  after(async () => { await cp?.stop() })

  test('control: a CRD object with a field of the wrong type or an unknown field is refused', async () => {
    const bad = { apiVersion: 'gateway.envoyproxy.io/v1alpha1', kind: 'BackendTrafficPolicy', metadata: { name: 'bad' }, spec: { targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: 'x' }], loadBalancer: { type: 'RoundRobin', slowStart: { windw: '30s' } } } }
    const res = await apply(bad, 'backendtrafficpolicies')
    assert.ok(res.status >= 400, `${res.status}`)
    assert.match(JSON.stringify(res.body), /windw|window/)
  })

  for (const args of PLANS) {
    test(`lameduck plan ${args.join(' ')}`, async () => {
      const run = await runCommand(plan, args)
      const [patch, ...resources] = parseAllDocuments(run.stdout).map((d) => d.toJSON() as Record<string, any>)
      const template = patch!.spec.template
      for (const c of [...template.spec.containers, ...(template.spec.initContainers ?? [])]) c.image ??= 'registry.example.com/orders:1.0.0'
      template.metadata.labels = { app: 'orders' }
      const deployment = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'orders' }, spec: { ...patch!.spec, selector: { matchLabels: { app: 'orders' } }, template } }
      if (args.includes('--readiness-gate')) assert.deepEqual(resources.map((d) => d.kind).filter((k) => k.startsWith('Role') || k === 'ServiceAccount'), ['ServiceAccount', 'Role', 'RoleBinding'])
      for (const doc of [deployment, ...resources]) {
        const res = await apply(doc, PLURALS[String(doc.kind)]!)
        assert.ok(res.status === 200 || res.status === 201, `${String(doc.kind)}: ${res.status} ${JSON.stringify(res.body?.message ?? res.body).slice(0, 500)}`)
      }
    })
  }

  test('the Istio, Gateway API and Envoy Gateway objects in examples/k8s', async () => {
    let n = 0
    for (const file of globSync('examples/k8s/*.yaml').sort()) {
      for (const doc of parseAllDocuments(readFileSync(file, 'utf8')).map((d) => d.toJSON() as Record<string, any> | null)) {
        if (doc === null || PLURAL[String(doc.kind)] === undefined) continue
        n++
        const res = await apply(doc, PLURAL[String(doc.kind)]!)
        assert.ok(res.status === 200 || res.status === 201, `${file}: ${String(doc.kind)}: ${res.status} ${JSON.stringify(res.body?.message ?? res.body).slice(0, 500)}`)
      }
    }
    assert.ok(n >= 2, 'the HTTPRoute of 01 and the DestinationRule of 06')
  })
})
