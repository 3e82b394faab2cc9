// Property tests of the doctor's reading of a preStop command (issue 13.9: the
// regexes it replaced took minutes on a 480 KB hook). Hostile inputs of any size
// cost a bounded amount of work per character, counted, not timed; and on
// ordinary commands the scanner reads exactly what the old regexes read.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { HOOK_SCAN_LIMIT, checkObjects, loadManifests, scanCommand, type CommandFacts } from '@lameduck/cli'
import { forAll, seedFromEnv, type Random } from './prng.ts'

/** Comparisons per character the scanner may make: its needles are at most 12 characters. */
const STEPS_PER_CHAR = 40
const BIG = 480 * 1024

const FRAGMENTS = ['lameduck', '/usr/local/bin/lameduck', 'prestop', 'prestop;', 'prestopx', 'wait-drained', 'curl', '-s', 'http://127.0.0.1:54199/offline?wait=true',
  '/offline', '/offline?', '/offlines', 'wait=', 'wait=1', 'wait=yes', 'wait=true', 'await=true', 'wait=truex', '?', '&', 'sleep', ';sleep', 'xsleep',
  '5', '1.5', '1.5m', '3h', '2s', '5x', '5.', '1.2.3', ';', '&&', '\'', '"', ' ', '  ', '\t', '\n', '\u00a0', 'é']

/** What the regexes before issue 13.9 read: the reference on short inputs (they are quadratic only on long ones). */
function reference (text: string): Omit<CommandFacts, 'truncated'> {
  let sleepSeconds: number | null = null
  for (const m of text.matchAll(/\bsleep\s+(\d+(?:\.\d+)?)([smh]?)(?![\w.])/g)) {
    const unit = m[2] === 'm' ? 60 : m[2] === 'h' ? 3600 : 1
    sleepSeconds = (sleepSeconds ?? 0) + Number(m[1]) * unit
  }
  return {
    prestop: /lameduck\S*\s+prestop\b/.test(text),
    offlineWait: /\/offline\?\S*\bwait=(true|1|yes)\b/.test(text),
    offline: /\/offline\b/.test(text),
    waitDrained: /lameduck\S*\s+wait-drained\b/.test(text),
    sleepSeconds
  }
}

function command (r: Random): string {
  const parts = r.array(0, 14, () => r.pick(FRAGMENTS))
  return parts.join(r.bool(0.3) ? '' : ' ')
}

test('the hook scanner reads what the old regexes read, on ordinary commands', () => {
  forAll('scan = regexes', seedFromEnv(1309), 5_000, command, (text) => {
    const { truncated, ...facts } = scanCommand(text)
    assert.equal(truncated, false)
    assert.deepEqual(facts, reference(text))
  })
})

/** Inputs built to make a backtracking matcher retry from every position. */
const HOSTILE = ['lameduck', 'lameduck ', 'lameduck\t ', '/offline?', '/offline?wait=', 'wait=', 'wait=t', 'sleep ', 'sleep 1', '1', 'sleep 1.', '/offline', 'lameduck prestopx ', ' ']

function hostile (r: Random, size: number): string {
  const unit = r.bool(0.6) ? r.pick(HOSTILE) : r.array(1, 4, () => r.pick(HOSTILE)).join('')
  return unit.repeat(Math.ceil(size / unit.length)).slice(0, size)
}

test('hostile 480 KB commands cost a bounded number of comparisons per character, and only the start is read', () => {
  forAll('bounded work', seedFromEnv(1310), 40, (r) => hostile(r, BIG), (text) => {
    const meter = { steps: 0 }
    const facts = scanCommand(text, meter)
    assert.equal(facts.truncated, true)
    assert.ok(meter.steps <= STEPS_PER_CHAR * HOOK_SCAN_LIMIT, `${meter.steps} comparisons for the ${HOOK_SCAN_LIMIT} characters read`)
  })
})

test('below the cap, work grows linearly: twice the input, at most about twice the comparisons', () => {
  forAll('linear growth', seedFromEnv(1311), 60, (r) => {
    const seed = r.int(0, 2 ** 31)
    return { seed, unit: hostile(r, 64) }
  }, ({ unit }) => {
    const half = unit.repeat(Math.floor(HOOK_SCAN_LIMIT / 2 / unit.length))
    const full = half + half
    const small = { steps: 0 }
    const large = { steps: 0 }
    scanCommand(half, small)
    scanCommand(full, large)
    assert.ok(small.steps > 0)
    assert.ok(large.steps <= 2 * small.steps + 64, `${small.steps} comparisons for ${half.length} characters, ${large.steps} for ${full.length}`)
    assert.ok(large.steps <= STEPS_PER_CHAR * full.length)
  })
})

test('doctor on a manifest with a 480 KB preStop: the verdict of the short command, messages of bounded length', () => {
  const manifest = (preStop: string): string => `apiVersion: v1
kind: Pod
metadata: { name: p, annotations: { lameduck.dev/windows: nacos } }
spec:
  containers:
    - name: app
      image: x
      ports: [{ containerPort: 3000 }]
      lifecycle: { preStop: { exec: { command: ["sh", "-c", ${JSON.stringify(preStop)}] } } }
      readinessProbe: { httpGet: { path: /health/ready, port: 3000 }, periodSeconds: 2, failureThreshold: 2 }
`
  const pad = 'lameduck'.repeat(BIG / 8)
  for (const [start, codes] of [['sleep 600 ', ['grace-too-short']], ['sleep 1 ', ['grace-too-short', 'sleep-shorter-than-window']], ['lameduck prestop ', ['grace-too-short']]] as const) {
    const { findings } = checkObjects(loadManifests(manifest(start + pad), 'big.yaml'))
    assert.deepEqual(findings.map((f) => f.code).sort(), [...codes])
    for (const f of findings) assert.ok(f.message.length < 1_000, `a ${f.message.length}-character message`)
  }
})
