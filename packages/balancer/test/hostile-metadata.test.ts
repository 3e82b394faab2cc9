// Metadata a registry hands over is data from other machines. A weight at the edge
// of what a double holds must not break the pick rotation (a denormal made a NaN
// deadline that split traffic evenly for good), and a huge value must not be copied
// into every problem, warning and stats() answer.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { METADATA_KEYS } from '@lameduck/core'
import type { Discovery, Instance } from '@lameduck/core'
import { createBalancer, staticDiscovery } from '../src/index.ts'
import type { Balancer } from '../src/index.ts'
import { EdfScheduler } from '../src/edf-scheduler.ts'
import { WEIGHT_RANGE } from '../src/instance-metadata.ts'
import { recordingLogger } from './helpers.ts'

/** Registries send weights as text: 1e-319 and 1e300 written out, as a decimal reader accepts them. */
const DENORMAL = `0.${'0'.repeat(318)}1`
const HUGE = `1${'0'.repeat(300)}`

/** A Discovery that lists exactly what it holds, nothing checked (as a registry would). */
function listing (list: Instance[]): Discovery & { list: Instance[] } {
  const d = { list, instances: () => d.list, subscribe: () => () => {} }
  return d
}

const at = (id: string, weight: string, metadata: Record<string, string> = {}): Instance =>
  ({ id, service: 'orders', host: '127.0.0.1', port: 10_000 + id.length, status: 'UP', metadata: { [METADATA_KEYS.weight]: weight, ...metadata } })

function count (balancer: Balancer, picks: number): Record<string, number> {
  const counts: Record<string, number> = { bad: 0, one: 0, heavy: 0 }
  for (let i = 0; i < picks; i++) counts[balancer.pick('orders').id]!++
  return counts
}

test('scheduler: a denormal weight leaves no NaN deadline behind, and the rest keep their shares across a reset', () => {
  const edf = new EdfScheduler<string>()
  for (const bad of [1e-319, Number.MIN_VALUE, Number.MAX_VALUE, Infinity]) {
    edf.reset(['bad', 'one', 'heavy'], [bad, 1, 100])
    for (let i = 0; i < 1_000; i++) edf.pick()
    edf.reset(['bad', 'one', 'heavy'], [bad, 1, 100]) // a rebuild (warmup tick, any change) rescales every deadline
    const counts: Record<string, number> = { bad: 0, one: 0, heavy: 0 }
    for (let i = 0; i < 2_000_000; i++) counts[edf.pick()!]!++
    const ratio = counts.heavy! / counts.one!
    assert.ok(Math.abs(ratio - 100) < 2, `weight ${bad}: heavy/one = ${ratio} (${JSON.stringify(counts)}), not 100`)
    if (bad < 1) assert.ok(counts.bad! <= 1, `weight ${bad} picked ${counts.bad} times`)
  }
})

test(`weights outside ${WEIGHT_RANGE.min}..${WEIGHT_RANGE.max} are clamped and listed; the sane instances keep their shares`, async () => {
  for (const [bad, clamped] of [[DENORMAL, WEIGHT_RANGE.min], [HUGE, WEIGHT_RANGE.max]] as const) {
    const discovery = listing([at('bad', bad), at('one', '1'), at('heavy', '100')])
    const balancer = createBalancer({ service: 'orders', discovery, refreshIntervalMs: 0 })
    const stats = balancer.stats().services[0]!.instances.find((i) => i.id === 'bad')!
    assert.equal(stats.weight, clamped)
    assert.match(stats.problems.join('\n'), new RegExp(`^weight \\S+ is outside ${WEIGHT_RANGE.min}\\.\\.${WEIGHT_RANGE.max}; clamped to ${clamped}$`, 'm'))
    count(balancer, 10_000)
    // Any change rebuilds the rotation: the sane instances' shares must follow their new weights.
    discovery.list = [at('bad', bad), at('one', '1'), at('heavy', '200')]
    balancer.refresh()
    const total = 201 + clamped
    const picks = Math.round(total * 200)
    const counts = count(balancer, picks)
    const ratio = counts.heavy! / counts.one!
    assert.ok(Math.abs(ratio - 200) < 4, `bad weight ${clamped}: heavy/one = ${ratio} (${JSON.stringify(counts)}), not 200`)
    assert.ok(Math.abs(counts.bad! / picks - clamped / total) < 0.001, `bad weight ${clamped}: share ${counts.bad! / picks}, not ${clamped / total}`)
    await balancer.close()
  }
})

test('staticDiscovery refuses a weight outside the range (configuration, so refused rather than clamped)', () => {
  for (const weight of [1e-319, 0.001, 10_001, 1e300, -1, Number.NaN, Infinity, '5']) {
    assert.throws(() => staticDiscovery({ orders: [{ host: '10.0.0.1', port: 80, weight: weight as number }] }),
      (err: Error & { code?: string }) => err.code === 'LAMEDUCK_ERR_INVALID_OPTION' && /has weight .*; use 0 \(never picked\) or 0\.01\.\.10000$/.test(err.message), String(weight))
  }
  for (const weight of [0, 0.01, 1, 10_000]) staticDiscovery({ orders: [{ host: '10.0.0.1', port: 80, weight }] })
})

const gc = ((): (() => void) => { setFlagsFromString('--expose-gc'); return runInNewContext('gc') as () => void })()

function heapUsed (): number {
  gc()
  gc()
  return process.memoryUsage().heapUsed
}

test('a huge metadata value shared by 50 instances is bounded in problems, warnings and stats() (and on the heap)', async () => {
  const big = '9'.repeat(2_000_000) // digits only: as text it is a number, just not a usable one
  const longId = `id-${'x'.repeat(100_000)}`
  const discovery = listing(Array.from({ length: 50 }, (_, n) => ({
    ...at(n === 0 ? longId : `i${n}`, big, { [METADATA_KEYS.warmup]: big, [METADATA_KEYS.registeredAt]: big }),
    port: 10_000 + n
  })))
  const { logger, warnings } = recordingLogger()
  const before = heapUsed()
  const balancer = createBalancer({ service: 'orders', discovery, logger, refreshIntervalMs: 0 })
  balancer.refresh()
  const grown = heapUsed() - before
  const instances = balancer.stats().services[0]!.instances
  assert.equal(instances.length, 50)
  for (const i of instances) {
    assert.equal(i.problems.length, 3, JSON.stringify(i.problems).slice(0, 500))
    for (const p of i.problems) assert.ok(p.length <= 500, `a problem of ${p.length} characters`)
    assert.equal(i.weight, 100, 'the safe default')
    assert.ok(JSON.stringify(i).length < 4_000, `stats of ${i.id.slice(0, 20)}: ${JSON.stringify(i).length} characters`)
  }
  assert.match(instances[0]!.id, /^id-x{497}… \(100003 characters\)$/)
  assert.match(instances[1]!.problems[0]!, /^lameduck\.registeredAt="9{400}… \(2000000 characters\)" is not a positive ms timestamp; ignored$/)
  assert.equal(warnings.length, 50, 'one warning per instance')
  for (const w of warnings) assert.ok(JSON.stringify(w.obj).length < 4_000, `a warning of ${JSON.stringify(w.obj).length} characters`)
  assert.ok(grown < 20 * 2 ** 20, `the balancer's heap grew by ${(grown / 2 ** 20).toFixed(1)} MB`)
  await balancer.close()
})
