// The local Envoy's admin API against the fixtures, byte for byte (status + body).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { envoyFor, fixtureJson, raw, waitFor, type Raw } from './envoy-helpers.ts'

interface ReadyCase { condition: string, state: string, status: number, body: string }
const ready = fixtureJson<{ common_headers: Record<string, string>, cases: ReadyCase[] }>('envoy_ready_responses.json')
const misc = fixtureJson<Record<string, { status: number, body?: string, body_prefix?: string } | string[] | string>>('envoy_admin_misc_responses.json')

function expectCase (res: Raw, expected: { status: number, body?: string, body_prefix?: string }, what: string): void {
  assert.equal(res.status, expected.status, `${what}: status`)
  if (expected.body !== undefined) assert.equal(res.body, expected.body, `${what}: body`)
  if (expected.body_prefix !== undefined) assert.ok(res.body.startsWith(expected.body_prefix), `${what}: body starts ${JSON.stringify(expected.body_prefix)}, got ${JSON.stringify(res.body.slice(0, 60))}`)
}

function readyCase (state: string, note?: string): ReadyCase {
  const c = ready.cases.find((x) => x.state === state && (note === undefined ? !x.condition.includes('drain_listeners') : x.condition.includes(note)))
  assert.ok(c !== undefined, state)
  return c
}

test('/ready answers every documented state byte for byte, with Envoy\'s headers', async (t) => {
  const pre = await envoyFor(t, { preInitializeDelayMs: 60_000 })
  const check = async (adminUrl: string, c: ReadyCase): Promise<void> => {
    const res = await raw(`${adminUrl}/ready`)
    expectCase(res, c, c.condition)
    for (const [name, value] of Object.entries(ready.common_headers)) assert.equal(res.headers[name], value, `${c.condition}: ${name}`)
  }
  await check(pre.envoy.adminUrl, readyCase('PRE_INITIALIZING'))

  const { envoy } = await envoyFor(t, { initializeDelayMs: 60_000 })
  await check(envoy.adminUrl, readyCase('INITIALIZING'))
  envoy.initialize()
  await check(envoy.adminUrl, readyCase('LIVE'))
  expectCase(await raw(`${envoy.adminUrl}/healthcheck/fail`, 'POST'), { status: 200, body: 'OK\n' }, 'fail')
  await check(envoy.adminUrl, readyCase('DRAINING'))
  expectCase(await raw(`${envoy.adminUrl}/healthcheck/ok`, 'POST'), { status: 200, body: 'OK\n' }, 'ok')
  await check(envoy.adminUrl, readyCase('LIVE'))
  for (const q of ['', '?graceful', '?inboundonly&graceful', '?inboundonly&graceful&skip_exit']) {
    expectCase(await raw(`${envoy.adminUrl}/drain_listeners${q}`, 'POST'), { status: 200, body: 'OK\n' }, `drain_listeners${q}`)
    await check(envoy.adminUrl, readyCase('LIVE', 'drain_listeners'))
  }
})

test('every documented admin response, byte for byte', async (t) => {
  const { envoy } = await envoyFor(t, { drainTimeMs: 60_000 })
  const old = await envoyFor(t, { drainTimeMs: 60_000, nonGracefulDrainNotifies: false })
  const admin = envoy.adminUrl
  const cases: Record<string, () => Promise<Raw>> = {
    'POST /healthcheck/fail': () => raw(`${admin}/healthcheck/fail`, 'POST'),
    'POST /healthcheck/ok': () => raw(`${admin}/healthcheck/ok`, 'POST'),
    'POST /drain_listeners?inboundonly': () => raw(`${admin}/drain_listeners?inboundonly`, 'POST'),
    'POST /drain_listeners?inboundonly&graceful (repeat call while same-direction drain already running)': async () => {
      await raw(`${admin}/drain_listeners?inboundonly&graceful`, 'POST')
      return raw(`${admin}/drain_listeners?inboundonly&graceful`, 'POST')
    },
    'POST /drain_listeners': () => raw(`${admin}/drain_listeners`, 'POST'),
    'POST /drain_listeners?skip_exit (no graceful) on Envoy WITHOUT runtime guard envoy.reloadable_features.non_graceful_drain_notifies_connections': () =>
      raw(`${old.envoy.adminUrl}/drain_listeners?skip_exit`, 'POST'),
    'GET on any mutating endpoint (e.g. GET /healthcheck/fail)': () => raw(`${admin}/healthcheck/fail`),
    'unknown path': () => raw(`${admin}/nope`),
    'GET /stats?format=blah': () => raw(`${admin}/stats?format=blah`),
    'GET /stats?type=Nope': () => raw(`${admin}/stats?type=Nope`),
    'GET /stats?filter=(': () => raw(`${admin}/stats?filter=(`),
    // Last: it stops the server.
    'POST /quitquitquit': () => raw(`${admin}/quitquitquit`, 'POST')
  }
  const documented = Object.keys(misc).filter((k) => !k.startsWith('_') && !k.startsWith('help text'))
  assert.deepEqual(documented.filter((k) => !(k in cases)), [], 'every fixture case is exercised')
  for (const [key, send] of Object.entries(cases)) expectCase(await send(), misc[key] as { status: number }, key)
  await envoy.closed
})

test('405 for any non-POST on each mutating endpoint, and nothing changes', async (t) => {
  const { envoy } = await envoyFor(t)
  for (const path of ['/healthcheck/fail', '/healthcheck/ok', '/drain_listeners?graceful', '/quitquitquit', '/reset_counters']) {
    for (const method of ['GET', 'PUT', 'DELETE']) {
      expectCase(await raw(`${envoy.adminUrl}${path}`, method), { status: 405, body: `Method ${method} not allowed, POST required.` }, `${method} ${path}`)
    }
  }
  assert.equal(envoy.state, 'LIVE')
  assert.equal(envoy.accepting, true)
  // Non-mutating handlers take any method, as in Envoy.
  expectCase(await raw(`${envoy.adminUrl}/ready`, 'POST'), { status: 200, body: 'LIVE\n' }, 'POST /ready')
})

test('exact path match, 404 with the help text, and /help', async (t) => {
  const { envoy } = await envoyFor(t)
  const lines = misc['help text lines for drain_listeners (GET /help)'] as string[]
  for (const path of ['/ready/', '/readyz', '/stats/', '/Ready', '/']) {
    const res = await raw(`${envoy.adminUrl}${path}`)
    expectCase(res, { status: 404, body_prefix: 'invalid path. admin commands are:\n' }, path)
    assert.ok(res.body.includes(`\n${lines.join('\n')}\n`), 'drain_listeners help lines, verbatim')
  }
  const help = await raw(`${envoy.adminUrl}/help`)
  assert.equal(help.status, 200)
  assert.ok(help.body.startsWith('admin commands are:\n  /drain_listeners (POST): drain listeners\n'))
  assert.ok(help.body.includes('\n  /ready: print server state, return 200 if LIVE, otherwise return 503\n'))
  const paths = [...help.body.matchAll(/^ {2}(\/[^\s:]+)/gm)].map((m) => m[1]!)
  assert.deepEqual(paths, [...paths].sort(), 'alphabetical')
})

test('query flags are presence-based: ?graceful=false still drains gracefully', async (t) => {
  const graceful = await envoyFor(t, { drainTimeMs: 60_000 })
  const plain = await envoyFor(t, { drainTimeMs: 60_000 })
  await raw(`${graceful.envoy.adminUrl}/drain_listeners?graceful=false`, 'POST')
  await raw(`${plain.envoy.adminUrl}/drain_listeners`, 'POST')
  assert.equal(graceful.envoy.accepting, true, 'graceful: keeps accepting for the drain time')
  assert.equal(plain.envoy.accepting, false, 'not graceful: stops at once')
  assert.equal((await raw(graceful.envoy.url + '/x')).status, 200)
  await assert.rejects(raw(plain.envoy.url + '/x'), (e: NodeJS.ErrnoException) => e.code === 'ECONNREFUSED')
  // usedonly=false is usedonly; an empty format is ignored.
  const used = await raw(`${graceful.envoy.adminUrl}/stats?usedonly=false&filter=^server\\.(version|live)$`)
  assert.equal(used.body, 'server.live: 1\nserver.version: 0\n')
  const textual = await raw(`${graceful.envoy.adminUrl}/stats?format=&filter=^server\\.version$`)
  assert.equal(textual.body, 'server.version: 0\n')
})

test('/stats JSON matches Envoy\'s samples and content type', async (t) => {
  const { envoy } = await envoyFor(t)
  const version = await raw(`${envoy.adminUrl}/stats?format=json&filter=^server\\.version$`)
  assert.equal(version.body, '{"stats":[{"name":"server.version","value":0}]}')
  assert.equal(version.headers['content-type'], 'application/json')
  assert.equal((await raw(`${envoy.adminUrl}/stats?format=json&filter=not_intended_to_appear`)).body, '{"stats":[]}')
  // RE2 has no lookaround: Envoy refuses it.
  assert.equal((await raw(`${envoy.adminUrl}/stats?filter=(?=x)`)).body, 'Invalid re2 regex')
  const prom = await raw(`${envoy.adminUrl}/stats/prometheus?filter=^server\\.version$`)
  assert.equal(prom.body, '# TYPE envoy_server_version gauge\nenvoy_server_version{} 0\n', 'no blank line after a family, as Envoy 1.40.0')
  assert.equal(prom.headers['content-type'], 'text/plain; charset=UTF-8')
  assert.equal((await raw(`${envoy.adminUrl}/stats?format=prometheus&filter=^server\\.version$`)).body, prom.body)
})

test('/server_info is 200 JSON in every state and reports the drain options', async (t) => {
  const { envoy } = await envoyFor(t, { initializeDelayMs: 60_000, drainTimeMs: 1500, drainStrategy: 'gradual' })
  const info = async (): Promise<{ state: string, command_line_options: Record<string, unknown> }> => {
    const res = await raw(`${envoy.adminUrl}/server_info`)
    assert.equal(res.status, 200)
    assert.equal(res.headers['content-type'], 'application/json')
    return JSON.parse(res.body) as { state: string, command_line_options: Record<string, unknown> }
  }
  assert.equal((await info()).state, 'INITIALIZING')
  envoy.initialize()
  await raw(`${envoy.adminUrl}/healthcheck/fail`, 'POST')
  const draining = await info()
  assert.equal(draining.state, 'DRAINING')
  assert.equal(draining.command_line_options.drain_time, '1.500s')
  assert.equal(draining.command_line_options.drain_strategy, 'Gradual')
})

test('/listeners, /reset_counters and /quitquitquit', async (t) => {
  const { envoy } = await envoyFor(t)
  assert.equal((await raw(`${envoy.adminUrl}/listeners`)).body, `ingress::127.0.0.1:${envoy.port}\n`)
  const json = JSON.parse((await raw(`${envoy.adminUrl}/listeners?format=json`)).body)
  assert.deepEqual(json, { listener_statuses: [{ name: 'ingress', local_address: { socket_address: { address: '127.0.0.1', port_value: envoy.port } } }] })
  await raw(envoy.url + '/x')
  assert.ok(envoy.stat('http.ingress_http.downstream_rq_total')! >= 1)
  expectCase(await raw(`${envoy.adminUrl}/reset_counters`, 'POST'), { status: 200, body: 'OK\n' }, 'reset')
  assert.equal(envoy.stat('http.ingress_http.downstream_rq_total'), 0)
  assert.equal((await raw(`${envoy.adminUrl}/stats?usedonly&filter=downstream_rq_total`)).body.includes('http.ingress_http.downstream_rq_total: 0\n'), true, 'a reset counter stays used')
  expectCase(await raw(`${envoy.adminUrl}/quitquitquit`, 'POST'), { status: 200, body: 'OK\n' }, 'quit')
  await envoy.closed
  await waitFor('the listener and admin to refuse', async () => {
    const refused = async (url: string): Promise<boolean> => raw(url).then(() => false, (e: NodeJS.ErrnoException) => e.code === 'ECONNREFUSED')
    return await refused(envoy.url) && await refused(`${envoy.adminUrl}/ready`)
  })
})
