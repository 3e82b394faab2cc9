// The stand-in's 3.x client open API and its 1.x-API-off mode, shaped as real Nacos 3.1.0 answered
// (test/real/nacos-conformance.test.ts and nacos-protocol.test.ts run the same calls on the real server).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startNacos } from '@lameduck/devkit'

async function call (url: string, method: string, path: string, params: Record<string, string | number | boolean>): Promise<{ status: number, body: any }> {
  const res = await fetch(`${url}${path}?${new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, String(v)]))}`, { method })
  const text = await res.text()
  return { status: res.status, body: text.startsWith('{') ? JSON.parse(text) : text }
}

test('v3 client API: register, heartbeat (21003 when unknown), list without disabled hosts, deregister (ok when unknown)', async (t) => {
  const server = await startNacos({ pushDelayMs: 0 })
  t.after(() => server.close())
  const v3 = (method: string, path: string, params: Record<string, string | number | boolean>): ReturnType<typeof call> => call(server.url, method, `/v3/client/ns/instance${path}`, params)
  assert.deepEqual(await v3('GET', '/list', { serviceName: 'nobody' }), { status: 200, body: { code: 0, message: 'success', data: [] } })
  assert.deepEqual(await v3('POST', '', { serviceName: 'orders', ip: '127.0.0.1', port: 3001, metadata: JSON.stringify({ k: 'v' }) }), { status: 200, body: { code: 0, message: 'success', data: 'ok' } })
  await v3('POST', '', { serviceName: 'orders', ip: '127.0.0.1', port: 3002, enabled: false })
  assert.deepEqual(await v3('POST', '', { serviceName: 'orders', ip: '127.0.0.1', port: 3001, heartBeat: true }), { status: 200, body: { code: 0, message: 'success', data: 'ok' } })
  assert.deepEqual(await v3('POST', '', { serviceName: 'orders', ip: '127.0.0.1', port: 3009, heartBeat: true }), { status: 200, body: { code: 21003, message: 'instance not found', data: null } })
  const listed = await v3('GET', '/list', { serviceName: 'orders' })
  assert.deepEqual(listed.body.data.map((h: any) => [h.port, h.healthy, h.enabled, h.metadata]), [[3001, true, true, { k: 'v' }]], 'the disabled host is not listed')
  assert.deepEqual(await v3('DELETE', '', { serviceName: 'orders', ip: '127.0.0.1', port: 3777 }), { status: 200, body: { code: 0, message: 'success', data: 'ok' } })
})

/* eslint-disable no-template-curly-in-string -- Nacos's own text carries a Spring placeholder */
test('v1ClientApi: false answers every 1.x client call 410 Gone naming its v3 alternative; the v3 API still serves', async (t) => {
  const server = await startNacos({ v1ClientApi: false })
  t.after(() => server.close())
  const alternatives: Array<[string, string, string]> = [
    ['POST', '/v1/ns/instance', 'POST ${contextPath:nacos}/v3/client/ns/instance'],
    ['DELETE', '/v1/ns/instance', 'DELETE ${contextPath:nacos}/v3/client/ns/instance'],
    ['GET', '/v1/ns/instance/list', 'GET ${contextPath:nacos}/v3/client/ns/instance/list'],
    ['PUT', '/v1/ns/instance/beat', 'POST ${contextPath:nacos}/v3/client/ns/instance?heartBeat=true'],
    ['GET', '/v1/ns/operator/metrics', 'GET ${contextPath:nacos}/v3/admin/ns/ops/metrics']
  ]
  for (const [method, path, alternative] of alternatives) {
    const answer = await call(server.url, method, path, { serviceName: 'x', ip: '127.0.0.1', port: 1 })
    assert.equal(answer.status, 410, `${method} ${path}`)
    assert.deepEqual({ status: answer.body.status, error: answer.body.error, path: answer.body.path }, { status: 410, error: 'Gone', path: `/nacos${path}` })
    assert.deepEqual(JSON.parse(answer.body.message), { code: 40000, message: `Current API will be deprecated, please use API(s) \`${alternative}\` instead, or set \`nacos.core.api.compatibility.client.enabled=true\` in application.properties.` })
  }
  assert.equal((await call(server.url, 'POST', '/v3/client/ns/instance', { serviceName: 'x', ip: '127.0.0.1', port: 1 })).status, 200)
})
