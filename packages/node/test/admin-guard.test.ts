// The admin listener answers curl, the CLI and preStop hooks, never a web page:
// a cross-site <img> or form may not take the instance out, and a page reached
// through DNS rebinding may not read /status.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { request as httpRequest } from 'node:http'
import { startServer, stop, until } from './helpers.ts'

/** A raw request with exactly these headers (undici would add its own). */
function call (url: string, method: string, headers: Record<string, string>, body?: string): Promise<{ status: number, body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers, setHost: headers.host === undefined }, (res) => {
      let text = ''
      res.setEncoding('utf8').on('data', (c: string) => { text += c }).on('end', () => { resolve({ status: res.statusCode!, body: text }) })
    })
    req.on('error', reject)
    req.end(body)
  })
}

test('cross-site and rebinding requests get 403 and change nothing; curl-like calls, localhost and port-forwards work', async (t) => {
  const s = await startServer({ windows: { clientFetchMs: 200 } })
  t.after(() => stop(s))
  await until(() => s.lameduck.state === 'serving', 'serving')
  const { port } = new URL(s.admin)
  const refused: Array<[string, string, Record<string, string>, string?]> = [
    ['GET', '/offline', { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors', 'sec-fetch-dest': 'image' }], // <img src>
    ['POST', '/offline', { origin: 'https://evil.example', 'content-type': 'text/plain' }, 'x'], // a form POST
    ['POST', '/offline', { 'sec-fetch-site': 'same-site', origin: 'http://localhost:3000' }], // another local app's page
    ['GET', '/status', { host: `evil.example:${port}` }], // DNS rebinding: the browser thinks it is same-origin
    ['GET', '/offline', { host: `rebind.evil.example:${port}`, 'sec-fetch-site': 'same-origin' }]
  ]
  for (const [method, path, headers, body] of refused) {
    const res = await call(`${s.admin}${path}`, method, headers, body)
    assert.equal(res.status, 403, `${method} ${path} ${JSON.stringify(headers)}: ${res.body}`)
    assert.match(JSON.parse(res.body).message, /does not answer web pages/)
    assert.doesNotMatch(res.body, /"instance"|"registry"/, 'nothing of the status leaks')
  }
  assert.equal(s.lameduck.state, 'serving', 'no refused call took the instance out')
  const allowed: Array<Record<string, string>> = [{}, { host: `localhost:${port}` }, { host: 'localhost:8080' }, { host: `[::1]:${port}` }, { 'sec-fetch-site': 'none' }]
  for (const headers of allowed) {
    const res = await call(`${s.admin}/status`, 'GET', headers)
    assert.equal(res.status, 200, `${JSON.stringify(headers)}: ${res.body}`)
  }
  const off = await call(`${s.admin}/offline`, 'GET', { 'user-agent': 'curl/8.5.0', accept: '*/*' })
  assert.equal(off.status, 202, 'curl localhost:54199/offline (a GET) still works, as the contract says')
})
