// The admin token check: the bearer scheme in any case (RFC 9110 §11.1), one or
// more spaces after it, and nothing else accepted; end to end over the listener.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { request } from 'undici'
import { silentLogger } from '@lameduck/core'
import { bearerChecker } from '../src/auth.ts'
import { serveAdmin } from '../src/admin.ts'
import type { AdminBackend } from '../src/admin-actions.ts'

test('the bearer scheme matches in any case; the token must match exactly', () => {
  const check = bearerChecker('s3cret-Token')
  for (const header of ['Bearer s3cret-Token', 'bearer s3cret-Token', 'BEARER s3cret-Token', 'bEaReR s3cret-Token', 'Bearer   s3cret-Token']) {
    assert.equal(check(header), true, header)
  }
  for (const header of [undefined, '', 'Bearer', 'Bearer ', 'bearer', 'Bearers3cret-Token', 'bearer\ts3cret-Token', 'Basic s3cret-Token',
    'Bearer s3cret-token', 'bearer S3CRET-TOKEN', 'Bearer s3cret-Token ', 'Bearer s3cret-Tok', 'Bearer x s3cret-Token', 'Bearerx s3cret-Token', 'Token s3cret-Token']) {
    assert.equal(check(header), false, JSON.stringify(header))
  }
})

test('the admin listener accepts a lower-case bearer scheme', async (t) => {
  const backend: AdminBackend = {
    state: () => 'serving',
    status: async () => ({ state: 'serving' }),
    metrics: async () => '',
    offline: async () => ({ statusCode: 202, body: { state: 'draining' } }),
    online: async () => ({ statusCode: 202, body: { state: 'serving' } })
  }
  const admin = await serveAdmin({ host: '127.0.0.1', port: 0, token: 'admin-token-1', logger: silentLogger }, backend)
  t.after(() => admin.close())
  for (const scheme of ['Bearer', 'bearer', 'BEARER']) {
    const res = await request(`${admin.url}/status`, { headers: { authorization: `${scheme} admin-token-1` } })
    assert.equal(res.statusCode, 200, scheme)
    assert.deepEqual(await res.body.json(), { state: 'serving' })
  }
  const wrong = await request(`${admin.url}/status`, { headers: { authorization: 'bearer admin-token-2' } })
  assert.equal(wrong.statusCode, 401)
  await wrong.body.dump()
})
