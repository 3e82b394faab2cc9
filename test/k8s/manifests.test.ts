// Every manifest under examples/k8s is accepted by the real API server: a server-side apply as a
// dry run (`?dryRun=All`, strict field validation) runs defaulting, validation and admission
// without storing anything, for new and existing objects alike. Namespaces the manifests name
// are created first. Kinds the server does not serve (CRDs such as PrometheusRule or Gateway
// API routes, not installed here) are skipped by name.
import assert from 'node:assert/strict'
import { globSync, readFileSync } from 'node:fs'
import { after, before, describe, test } from 'node:test'
import { parseAllDocuments } from 'yaml'
import { skipReason, startControlPlane, type ControlPlane } from './helpers/control-plane.ts'

const reason = skipReason()
const NAMESPACE = 'examples'

interface Resource { name: string, namespaced: boolean }

describe('examples/k8s on a real API server (server-side dry run)', { skip: reason ?? false }, () => {
  let cp: ControlPlane
  const kinds = new Map<string, Resource>()
  /** The resource that serves `kind` in `apiVersion`, from the server's own discovery. */
  const resource = async (apiVersion: string, kind: string): Promise<Resource | undefined> => {
    const key = `${apiVersion} ${kind}`
    if (!kinds.has(key)) {
      const res = await cp.api('GET', apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`)
      for (const r of (res.status === 200 ? res.body.resources : []) as Array<{ name: string, kind: string, namespaced: boolean }>) {
        if (!r.name.includes('/')) kinds.set(`${apiVersion} ${r.kind}`, { name: r.name, namespaced: r.namespaced })
      }
    }
    return kinds.get(key)
  }

  before(async () => {
    cp = await startControlPlane()
    assert.equal((await cp.api('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } })).status, 201)
  }, { timeout: 120_000 })
  after(async () => { await cp?.stop() })

  const files = globSync('examples/k8s/**/*.{yaml,yml}').sort()
  test('there are manifests to check', () => assert.ok(files.length >= 4, files.join(', ')))

  test('control: the dry run refuses a broken manifest (a field of the wrong type, an unknown field)', async () => {
    const bad = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'bad' }, spec: { replicas: 1, selector: { matchLabels: { app: 'bad' } }, template: { metadata: { labels: { app: 'bad' } }, spec: { containers: [{ name: 'app', image: 'x', readinessProbe: { httpGet: { path: '/health/ready', port: 'http' } }, terminationGracePeriod: 30 }] } } } }
    const res = await cp.api('PATCH', `/apis/apps/v1/namespaces/${NAMESPACE}/deployments/bad?dryRun=All&fieldManager=lameduck-test&fieldValidation=Strict`, bad, 'admin', 'application/apply-patch+yaml')
    assert.ok(res.status >= 400, `${res.status}`)
    assert.match(JSON.stringify(res.body), /terminationGracePeriod/)
  })

  for (const file of files) {
    test(file, async (t) => {
      const docs = parseAllDocuments(readFileSync(file, 'utf8')).map((d) => d.toJSON() as Record<string, any> | null).filter((d) => d !== null)
      assert.ok(docs.length > 0)
      for (const doc of docs) {
        const what = `${String(doc.kind)} ${String(doc.metadata?.name)}`
        const r = await resource(String(doc.apiVersion), String(doc.kind))
        if (r === undefined) {
          t.diagnostic(`${what}: ${String(doc.apiVersion)} ${String(doc.kind)} is not served here (a CRD not installed); skipped`)
          continue
        }
        const ns = doc.metadata?.namespace ?? NAMESPACE
        if (r.namespaced && ns !== NAMESPACE) await cp.api('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } })
        const base = `/${String(doc.apiVersion).includes('/') ? 'apis' : 'api'}/${String(doc.apiVersion)}`
        const path = `${base}${r.namespaced ? `/namespaces/${ns}` : ''}/${r.name}/${String(doc.metadata?.name)}`
        const res = await cp.api('PATCH', `${path}?dryRun=All&fieldManager=lameduck-test&fieldValidation=Strict`, doc, 'admin', 'application/apply-patch+yaml')
        assert.ok(res.status === 200 || res.status === 201, `${file}: ${what}: ${res.status} ${JSON.stringify(res.body?.message ?? res.body).slice(0, 500)}`)
      }
    })
  }
})
