// Credentials never leave through what a person or a log pipeline reads (issue 13.3).
// Each adapter runs against a devkit stand-in with seeded random credentials in its
// URL or client options, through success and failure paths (a dead server next to a
// live one, 5xx answers, bad options); every captured log line, describe(), admin
// /status body and error (message, stack, cause, fields) is then searched for them.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { inspect } from 'node:util'
import { request } from 'undici'
import { InvalidOptionError, redactText } from '@lameduck/core'
import { startEureka, startEnvoy, startNacos } from '@lameduck/devkit'
import { EnvoyAdmin } from '@lameduck/envoy'
import { eurekaDiscovery, eurekaRegistry } from '@lameduck/eureka'
import { nacosRegistry } from '@lameduck/nacos'
import { prng, seedFromEnv } from '../fuzz/prng.ts'
import { deadPort } from '@lameduck/test-utils'
import { faultProxy, loggedProvider, memoryLog, until, waitState, type Log } from './helpers.ts'

const ALNUM = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'
const WINDOW = { serverCacheMs: 50, clientFetchMs: 50, balancerRefreshMs: 50, marginMs: 100 }

/** Seeded secrets, distinct per test, long enough never to occur by chance. */
function secrets (seed: number): { user: string, pass: string, token: string, accessKey: string, secretKey: string } {
  const r = prng(seedFromEnv(seed))
  const s = (prefix: string): string => `${prefix}${r.string(16, 24, ALNUM)}`
  return { user: s('u'), pass: s('p'), token: s('t'), accessKey: s('ak'), secretKey: s('sk') }
}

/** Everything a test captured, as text. */
class Captured {
  parts: string[] = []
  log (log: Log): void { this.parts.push(JSON.stringify(log.lines)) }
  value (label: string, v: unknown): void { this.parts.push(`${label}: ${JSON.stringify(v)}`) }
  /** An error with its message, stack, causes and own fields. */
  error (err: unknown): void { this.parts.push(inspect(err, { depth: 6 }), err instanceof Error ? `${err.message}\n${err.stack ?? ''}` : String(err)) }
  async catching (what: () => unknown): Promise<void> {
    try { await what() } catch (err) { this.error(err); return }
    assert.fail('expected an error')
  }

  assertClean (values: Record<string, string>, redactedMarkers: RegExp[]): void {
    const text = this.parts.join('\n')
    for (const [name, value] of Object.entries(values)) {
      const at = text.indexOf(value)
      assert.equal(at, -1, `the ${name} leaked: …${text.slice(Math.max(0, at - 200), at + 60)}…`)
    }
    // The paths that would leak were taken: their redacted form is there.
    for (const marker of redactedMarkers) assert.match(text, marker)
  }
}

test('Eureka: credentials in the service URL never show in logs, describe(), /status or errors', async (t) => {
  const s = secrets(1330)
  const server = await startEureka({ responseCacheUpdateIntervalMs: 50 })
  const auth: string[] = []
  let failing = false
  const proxy = await faultProxy(`http://127.0.0.1:${server.port}`)
  proxy.fault = (req) => { auth.push(String(req.headers.authorization)); return failing ? { status: 503, body: 'unavailable' } : 'pass' }
  const dead = await deadPort()
  const withCreds = (port: number): string => `http://${s.user}:${s.pass}@127.0.0.1:${port}/eureka`
  const urls = [withCreds(dead.port), withCreds(proxy.port)]
  const captured = new Captured()
  const log = memoryLog()
  const registry = eurekaRegistry({ url: urls, logger: log.logger, client: { eureka: { heartbeatInterval: 100, maxRetries: 1, requestRetryDelay: 10 } }, registerTimeoutMs: 2_000, requestTimeoutMs: 500, backoff: { initialMs: 20, maxMs: 100 } })
  const a = await loggedProvider('a', { registry, windows: WINDOW }, log)
  const discoveryLog = memoryLog()
  const discovery = eurekaDiscovery({ url: urls, logger: discoveryLog.logger, requestTimeoutMs: 500, client: { eureka: { registryFetchInterval: 50, maxRetries: 1, requestRetryDelay: 10 } } })
  t.after(async () => { await discovery.close(); await a.app.close(); await proxy.close(); await server.close(); await dead.close() })

  await waitState(a.app, 'serving')
  await until(() => discovery.instances('orders').length === 1, 'the consumer to see a')
  assert.ok(auth.includes(`Basic ${Buffer.from(`${s.user}:${s.pass}`).toString('base64')}`), 'the credentials were used')
  // Eureka fails for a while: heartbeats and fetches fail and are logged.
  failing = true
  await until(() => log.lines.length > 0 && proxy.seen.filter((r) => r.fault === '503').length >= 6, 'failed heartbeats and fetches')
  failing = false
  captured.value('status', await (await request(`${a.admin}/status`)).body.text())
  captured.value('registry.describe', registry.describe())
  captured.value('discovery.describe', discovery.describe())
  await (await request(`${a.admin}/offline?wait=true`, { method: 'POST' })).body.text()
  captured.value('status after offline', await (await request(`${a.admin}/status`)).body.text())

  // Failures end to end: a registry with only the dead server, and options that are wrong.
  const lone = eurekaRegistry({ url: withCreds(dead.port), logger: log.logger, client: { eureka: { maxRetries: 0 } }, registerTimeoutMs: 1_000, requestTimeoutMs: 300 })
  await captured.catching(() => lone.register({ service: 'orders', id: 'x', host: '127.0.0.1', port: 1, status: 'UP', metadata: {} }))
  captured.value('lone.describe', lone.describe())
  await lone.close()
  await captured.catching(() => eurekaRegistry({ url: `ftp://${s.user}:${s.pass}@127.0.0.1/eureka` }))
  await captured.catching(() => eurekaRegistry({ url: `${withCreds(dead.port)}/apps` }))
  await captured.catching(() => eurekaRegistry(`${withCreds(dead.port)}?token=${s.token}` as never))
  captured.log(log)
  captured.log(discoveryLog)
  captured.assertClean({ password: s.pass, user: s.user, token: s.token }, [/\*\*\*@127\.0\.0\.1/])
})

test('Nacos: username/password and accessKey/secretKey never show in logs, describe(), /status or errors', async (t) => {
  const s = secrets(1331)
  const server = await startNacos()
  const dead = await deadPort()
  t.after(dead.close)
  const client = { username: s.user, password: s.pass, accessKey: s.accessKey, secretKey: s.secretKey }
  const captured = new Captured()
  const log = memoryLog()
  // A dead server beside the live one: the SDK tries them in a random order, and logs each failure.
  const registry = nacosRegistry({ serverList: [`127.0.0.1:${dead.port}`, `127.0.0.1:${server.port}`], client, logger: log.logger, beatIntervalMs: 100 })
  const a = await loggedProvider('a', { registry, windows: WINDOW }, log)
  t.after(async () => { await a.app.close(); await server.close() })
  await waitState(a.app, 'serving')
  captured.value('status', await (await request(`${a.admin}/status`)).body.text())
  captured.value('describe', registry.describe())
  await (await request(`${a.admin}/offline?wait=true`, { method: 'POST' })).body.text()

  const lone = nacosRegistry({ serverList: `127.0.0.1:${dead.port}`, client, logger: log.logger })
  await captured.catching(() => lone.register({ service: 'orders', id: 'x', host: '127.0.0.1', port: 1, status: 'UP', metadata: {} }))
  assert.ok(log.lines.some((l) => /ECONNREFUSED/.test(l.msg)), 'the SDK logged its failed request')
  captured.value('lone.describe', lone.describe())
  await lone.close()
  await captured.catching(() => nacosRegistry({ serverList: `${s.user}:${s.pass}@127.0.0.1:8848` }))
  await captured.catching(() => nacosRegistry({ serverList: `${s.user}@127.0.0.1:8848` }))
  await captured.catching(() => nacosRegistry({ serverList: `http://${s.user}:${s.pass}@127.0.0.1:8848` }))
  captured.log(log)
  // The SDK's HTTP client errors (urllib RequestError) carry the request, query and credentials included, in their fields.
  captured.assertClean({ password: s.pass, user: s.user, accessKey: s.accessKey, secretKey: s.secretKey }, [/"name":"RequestError","code":"ECONNREFUSED"/])
})

test('Envoy: userinfo in the admin URL is sent as basic auth, and never shows in logs, describe(), /status or errors', async (t) => {
  const s = secrets(1332)
  const captured = new Captured()
  const log = memoryLog()
  const auth: string[] = []
  const a = await loggedProvider('a', { windows: WINDOW, sidecar: false }, log)
  const envoy = await startEnvoy({ upstream: a.url, drainTimeMs: 200 })
  let failing = false
  const proxy = await faultProxy(`http://127.0.0.1:${envoy.adminPort}`)
  proxy.fault = (req) => { auth.push(String(req.headers.authorization)); return failing ? { status: 500, body: `oops ?token=${s.token}` } : 'pass' }
  t.after(async () => { await a.app.close(); await proxy.close(); await envoy.close() })
  const url = `http://${s.user}:${s.pass}@127.0.0.1:${proxy.port}`

  const admin = new EnvoyAdmin({ url, logger: log.logger })
  t.after(() => admin.close())
  assert.equal(await admin.ready(), 'LIVE')
  assert.ok(auth.includes(`Basic ${Buffer.from(`${s.user}:${s.pass}`).toString('base64')}`), 'userinfo went out as basic auth')
  captured.value('admin.url', admin.url)
  failing = true
  await captured.catching(() => admin.serverInfo())
  failing = false
  const deadAdmin = await deadPort()
  t.after(deadAdmin.close)
  const dead = new EnvoyAdmin({ url: `http://${s.user}:${s.pass}@127.0.0.1:${deadAdmin.port}`, logger: log.logger, timeoutMs: 300 })
  await captured.catching(() => dead.ready())
  await captured.catching(() => dead.waitReady({ timeoutMs: 300, intervalMs: 50 }))
  await dead.close()
  await captured.catching(() => new EnvoyAdmin({ url: `http://${s.user}:${s.pass}@127.0.0.1:1/?token=${s.token}` }))
  await captured.catching(() => new EnvoyAdmin({ url: `ftp://${s.user}:${s.pass}@127.0.0.1:1` }))
  assert.throws(() => new EnvoyAdmin({ url: `http://${s.user}%zz:${s.pass}@127.0.0.1:1` }), (err: Error) => {
    captured.error(err)
    return err instanceof InvalidOptionError && /envoyAdmin\.url: its user and password are not valid percent-encoding/.test(err.message)
  })

  // Through the plugin: its /status names the sidecar's admin URL, and a drain talks to it.
  const b = await loggedProvider('b', { windows: WINDOW, sidecar: { envoyAdmin: url, drainTimeoutMs: 500 } }, log)
  t.after(() => b.app.close())
  await waitState(b.app, 'serving')
  captured.value('status', await (await request(`${b.admin}/status`)).body.text())
  await (await request(`${b.admin}/offline?wait=true`, { method: 'POST' })).body.text()
  captured.value('status after offline', await (await request(`${b.admin}/status`)).body.text())
  captured.log(log)
  captured.assertClean({ password: s.pass, user: s.user, token: s.token }, [/\*\*\*@127\.0\.0\.1/])
})

test('redactText on what the libraries print: userinfo, query secrets, JSON fields, bearer tokens', () => {
  const cases: Array<[string, string]> = [
    ['Eureka request failed to endpoint http://u:p@eureka:8761/eureka/apps/, next server retry in 500ms', 'Eureka request failed to endpoint http://***@eureka:8761/eureka/apps/, next server retry in 500ms'],
    ['connect ECONNREFUSED 127.0.0.1:1, POST http://127.0.0.1:1/nacos/v1/ns/instance?serviceName=x&username=nacos&password=s3cret&ak=AK1&signature=zz -1', 'connect ECONNREFUSED 127.0.0.1:1, POST http://127.0.0.1:1/nacos/v1/ns/instance?serviceName=x&username=nacos&password=***&ak=***&signature=*** -1'],
    ['{"accessKey":"AK1","secretKey":"SK1","endpoint":"acm.example"}', '{"accessKey":"***","secretKey":"***","endpoint":"acm.example"}'],
    ['authorization: Bearer abc.def-ghi', 'authorization: Bearer ***'],
    ['{"authorization":"Basic dXNlcjpwYXNz"}', '{"authorization":"***"}'],
    ['http://127.0.0.1:15000/ready', 'http://127.0.0.1:15000/ready'],
    ['postgres://app:hunter2@db/x?sslmode=require', 'postgres://***@db/x?sslmode=require'],
    ['plain text keeps its pairs: port=8080, state: serving, user=orders', 'plain text keeps its pairs: port=8080, state: serving, user=orders']
  ]
  for (const [input, expected] of cases) assert.equal(redactText(input), expected)
})

test('the app\'s and a custom registry\'s own text: readiness errors, register/deregister errors and describe() are redacted in /status, problem events and logs', async (t) => {
  const s = secrets(1334)
  const captured = new Captured()
  let failReadiness = true
  let failRegistry = 2
  const registry = {
    async register () { if (failRegistry-- > 0) throw new Error(`POST https://svc:${s.pass}@registry.internal/v1?token=${s.token} failed: 503`) },
    async deregister () { throw new Error(`DELETE failed, header Authorization: Bearer ${s.secretKey}`) },
    close: async () => {},
    describe: () => ({ type: 'homegrown', url: `https://${s.user}:${s.pass}@registry.internal`, apiKey: s.accessKey })
  }
  const problems: unknown[] = []
  const p = await loggedProvider('a', {
    registry,
    readiness: [() => { if (failReadiness) throw new Error(`connect ECONNREFUSED postgres://app:${s.pass}@db.internal:5432`); return true }],
    windows: WINDOW,
    shutdownTimeoutMs: 3_000
  })
  t.after(() => p.app.close())
  p.app.lameduck.on('problem', (problem) => { problems.push(problem) })
  captured.value('status while waiting', await (await request(`${p.admin}/status`)).body.json())
  failReadiness = false
  await waitState(p.app, 'serving')
  captured.value('status serving', await (await request(`${p.admin}/status`)).body.json())
  await p.app.lameduck.offline({ reason: 'test' }).catch((err: unknown) => { captured.error(err) })
  captured.value('status offline', await (await request(`${p.admin}/status`)).body.json())
  captured.value('problems', problems)
  captured.log(p.log)
  captured.assertClean({ password: s.pass, token: s.token, bearer: s.secretKey, user: s.user, apiKey: s.accessKey }, [/postgres:\/\/\*\*\*@db\.internal/, /token=\*\*\*/, /Bearer \*\*\*/, /"apiKey":"\*\*\*"/])
})
