// Requests longer than the bounds. maxRequestMs bounds the in-flight wait of the
// offline sequence (the request itself is not cut: the process stays up);
// shutdownTimeoutMs bounds a signal-driven shutdown, and then cuts. Extends
// packages/fastify/test/signals.test.ts (one slow request cut at the bound) with
// a mix of requests: those that fit are served, the rest are cut and counted.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { request } from 'undici'
import { startProvider, until } from '../helpers.ts'
import { spawnApp } from './child.ts'

test('offline: a request longer than maxRequestMs ends the wait at the bound, reported; it still completes afterwards', async (t) => {
  const a = await startProvider('a', { windows: { clientFetchMs: 300 }, maxRequestMs: 400 })
  t.after(() => a.app.close())
  const long = request(`${a.url}/work?ms=1500`)
  const short = request(`${a.url}/work?ms=500`)
  await until(() => a.app.lameduck.lifecycle.inflight.count === 2, 'two requests in flight')
  const started = Date.now()
  const res = await request(`${a.admin}/offline?wait=true`, { method: 'POST' })
  const took = Date.now() - started
  const body = await res.body.json() as { state: string, report: { inflightAtEnd: number, inflightWaitMs: number, problems: Array<{ step: string, message: string }> } }
  assert.equal(body.state, 'offline')
  assert.ok(took >= 300, `the window first (${took} ms)`)
  // Bounded by maxRequestMs, not by the requests: the 1 500 ms one was still running when the wait ended.
  assert.equal(body.report.inflightAtEnd, 1, 'the short one finished, the long one is still running')
  assert.deepEqual(body.report.problems.map((p) => [p.step, p.message]), [['in-flight drain', '1 request(s) still in flight after maxRequestMs (400 ms)']])
  assert.equal((await short).statusCode, 200)
  const longRes = await long
  assert.equal(longRes.statusCode, 200, 'not cut: offline keeps the process up')
  assert.equal(longRes.headers['x-instance'], 'a')
  await longRes.body.dump()
})

test('SIGTERM: requests that fit in shutdownTimeoutMs are served, longer ones are cut at the bound and counted in the log', async (t) => {
  const app = spawnApp(t, { windows: { clientFetchMs: 300 }, maxRequestMs: 10_000, shutdownTimeoutMs: 1_500 })
  const { url, admin } = await app.listening()
  await app.waitState('serving')
  const fits = request(`${url}/slow?ms=700`)
  const cut = [request(`${url}/slow?ms=6000`).catch((err: Error) => err), request(`${url}/slow?ms=6000`).catch((err: Error) => err)]
  await until(async () => ((await (await request(`${admin}/status`)).body.json()) as { inflight: number }).inflight === 3, 'three requests in flight')
  const sent = app.kill('SIGTERM')
  // New requests during the drain are served, and told the instance is leaving.
  await app.waitState('draining')
  const during = await request(`${url}/slow?ms=10`)
  assert.equal(during.statusCode, 200)
  assert.equal(during.headers['x-lameduck-state'], 'draining')
  await during.body.dump()
  const fitsRes = await fits
  const fitsAt = Date.now()
  assert.equal(fitsRes.statusCode, 200, 'a request that ends before the bound is served')
  await fitsRes.body.dump()
  const { code, at } = await app.exited
  assert.equal(code, 1)
  assert.ok(at - sent >= 1_500, `exited at the bound, not before (${at - sent} ms)`)
  const line = app.logged(/shutdownTimeoutMs \(1500 ms\) reached/)
  assert.ok(line, 'the cut is logged')
  assert.match(line.msg!, /cutting: 2 request\(s\) in flight, \d+ open connection\(s\), 0 ms of window left \(state draining, phase inflight\)/)
  for (const c of await Promise.all(cut)) assert.ok(c instanceof Error, 'the longer requests were cut')
  assert.ok(app.events('deregister')[0]!.t <= fitsAt, 'deregistered at once: before the 700 ms request ended, long before the cut')
})
