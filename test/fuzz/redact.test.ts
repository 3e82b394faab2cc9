// Property tests of core's redaction (issue 13.3): a seeded random secret placed
// where libraries print credentials (URL userinfo, query parameters, JSON fields,
// key: value text, auth headers), inside random surrounding text, never survives;
// redacting twice changes nothing more; text without secrets is left alone.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { isSecretName, redactError, redactText, redactValue } from '@lameduck/core'
import { redactCounted } from '../../packages/core/src/redact.ts'
import { forAll, seedFromEnv, type Random } from './prng.ts'

const SAFE = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'
const NAMES = ['password', 'passwd', 'pwd', 'token', 'accessToken', 'access_token', 'secret', 'secretKey', 'secret_key', 'accessKey', 'ak', 'apiKey', 'api-key', 'Spas-SecurityToken', 'signature', 'clientSecret']
const SURROUNDINGS = ['', ' ', 'Error: ', 'connect ECONNREFUSED 127.0.0.1:1, POST ', 'failed: ', '\n', '(', '[', 'url=', 'at ']
const TAILS = ['', ' ', ' -1 (connected: false)', ', next retry in 500ms', '\n    at x (file.js:1:2)', ')', '.', '#frag', ' headers: {}']

function secretIn (r: Random): { text: string, secret: string } {
  const secret = `S${r.string(12, 30, SAFE)}`
  const host = r.pick(['127.0.0.1:8761', 'eureka.prod.svc:8761', '[::1]:8848', 'nacos'])
  const name = r.pick(NAMES)
  const shapes = [
    () => `http://user:${secret}@${host}/eureka/apps/`,
    () => `https://${secret}@${host}/x`,
    () => `http://${r.string(1, 8, SAFE)}:${secret}@${host}`,
    () => `http://${host}/nacos/v1/ns/instance?serviceName=x&${name}=${secret}&b=1`,
    () => `http://${host}/p?${name}=${secret}`,
    () => `{"${name}":"${secret}","host":"${host}"}`,
    () => `{ '${name}': '${secret}' }`,
    () => `${name}=${secret}`,
    () => `${name}: ${secret}`,
    () => `authorization: Bearer ${secret}`,
    () => `Basic ${secret}`
  ]
  const text = `${r.pick(SURROUNDINGS)}${r.pick(shapes)()}${r.pick(TAILS)}`
  return { text, secret }
}

test('a secret where libraries print credentials never survives redaction, whatever surrounds it', () => {
  forAll('no secret survives', seedFromEnv(1333), 5_000, (r) => {
    const parts = r.array(1, 3, () => secretIn(r))
    return { text: parts.map((p) => p.text).join(r.pick([' ', '; ', '\n'])), secrets: parts.map((p) => p.secret) }
  }, ({ text, secrets }) => {
    const once = redactText(text)
    for (const s of secrets) assert.ok(!once.includes(s), `the secret survived: ${once}`)
    assert.equal(redactText(once), once, 'redacting again changes nothing')
  })
})

test('an error, its stack and its causes are redacted in place; values are copied with secret keys hidden', () => {
  forAll('errors and values', seedFromEnv(1334), 500, secretIn, ({ text, secret }) => {
    const err = new Error(`outer ${text}`, { cause: new Error(`inner ${text}`) })
    redactError(err)
    assert.ok(!err.message.includes(secret) && !err.stack!.includes(secret) && !(err.cause as Error).message.includes(secret))
    const view = JSON.stringify(redactValue({ url: text, nested: [{ password: secret, secretKey: secret }], err: new Error(text) }))
    assert.ok(!view.includes(secret), view)
  })
})

test('text without secrets is left as it is', () => {
  const plain = ['http://127.0.0.1:8761/eureka/apps/ORDERS/a', 'lameduck: register (attempt 2, next in 400 ms) failed: ECONNREFUSED',
    '{"state":"serving","port":3000,"user":"orders"}', 'GET /status?wait=true&verbose=1', 'window 11.5 s (nacos), 3 requests while draining']
  for (const text of plain) assert.equal(redactText(text), text)
  for (const name of ['username', 'host', 'port', 'serverList', 'endpoint', 'namespace']) assert.equal(isSecretName(name), false, name)
  for (const name of NAMES) assert.equal(isSecretName(name), true, name)
})

test('hostile 480 KB text costs linear work: counted characters scanned and key matches, not time', () => {
  const units = ['a=', 'x=password=', 'token=//=', 'password=***=', '://', 'http://a@', 'Bearer ', '"password":"', "pwd='a", 'token: ', '?token', '=', ':', ' ']
  forAll('linear redaction', seedFromEnv(1335), 30, (r) => r.bool(0.5) ? r.pick(units) : r.array(2, 4, () => r.pick(units)).join(''), (unit) => {
    const work = (size: number): number => {
      const meter = { steps: 0 }
      redactCounted(unit.repeat(Math.ceil(size / unit.length)).slice(0, size), meter)
      return meter.steps
    }
    const small = work(120 * 1024)
    const large = work(480 * 1024)
    assert.ok(large <= 4 * 480 * 1024, `${large} steps for 480 KB`)
    assert.ok(large <= 4 * small + 64, `${small} steps for 120 KB, ${large} for 480 KB: not linear`)
  })
})
