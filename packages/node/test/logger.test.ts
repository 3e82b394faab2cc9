// The default logger: readable lines on stderr, JSON lines with LAMEDUCK_LOG=json,
// and the fields of a child (the admin's `lameduck.component`) kept in both.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { request } from 'undici'
import { stderrLogger } from '../src/logger.ts'
import { startServer, stop, until } from './helpers.ts'

test('text: one readable line per event, debug dropped, an error named under a warning', () => {
  const lines: string[] = []
  const log = stderrLogger({ format: 'text', write: (l) => lines.push(l) })
  log.debug({}, 'not shown')
  log.info({ lameduck: { to: 'draining' } }, 'lameduck: serving → draining (SIGTERM, 5 ms in serving)')
  log.warn({ err: new Error('ECONNREFUSED') }, 'lameduck: deregister failed')
  assert.equal(lines.length, 2)
  assert.match(lines[0]!, /^\d\d:\d\d:\d\d\.\d{3} INFO {2}lameduck: serving → draining \(SIGTERM, 5 ms in serving\)\n$/)
  assert.match(lines[1]!, /^\d\d:\d\d:\d\d\.\d{3} WARN {2}lameduck: deregister failed\n {4}Error: ECONNREFUSED\n$/)
})

test('json: pino-shaped lines, and a child\'s bindings merged into the lameduck object (component)', () => {
  const lines: string[] = []
  const log = stderrLogger({ format: 'json', write: (l) => lines.push(l) }) as ReturnType<typeof stderrLogger> & { child: (b: object) => ReturnType<typeof stderrLogger> }
  log.child({ lameduck: { component: 'admin' } }).info({ lameduck: { action: 'offline' } }, 'lameduck admin: offline requested')
  const line = JSON.parse(lines[0]!) as { level: number, msg: string, lameduck: Record<string, unknown> }
  assert.equal(line.level, 30)
  assert.deepEqual(line.lameduck, { component: 'admin', action: 'offline' })
})

test('attach() with no logger: the admin listener\'s lines carry lameduck.component (LAMEDUCK_LOG=json)', async (t) => {
  const lines: string[] = []
  const write = process.stderr.write
  process.env.LAMEDUCK_LOG = 'json'
  process.stderr.write = ((chunk: string) => { lines.push(String(chunk)); return true }) as typeof process.stderr.write
  const restore = (): void => { process.stderr.write = write; delete process.env.LAMEDUCK_LOG }
  const s = await startServer({ logger: undefined }).catch((err: unknown) => { restore(); throw err })
  t.after(async () => { await stop(s); restore() })
  await until(() => s.lameduck.state === 'serving', 'serving')
  await (await request(`${s.admin}/offline`, { method: 'POST' })).body.dump()
  const parsed = lines.flatMap((l) => l.split('\n')).filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { msg: string, lameduck?: { component?: string } })
  const admin = parsed.find((l) => /offline requested/.test(l.msg))
  assert.equal(admin?.lameduck?.component, 'admin', JSON.stringify(parsed.map((l) => l.msg)))
})
