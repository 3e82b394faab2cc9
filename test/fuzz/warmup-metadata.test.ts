// Property tests of core parseWarmupMetadata, what every consumer runs on every
// instance's metadata: never a throw, always a usable weight and warmup, and no
// silent wrong value (a value that was present and ignored is listed as a problem).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { DEFAULT_WEIGHT, METADATA_KEYS, parseWarmupMetadata } from '@lameduck/core'
import { forAll, seedFromEnv, type Random } from './prng.ts'

type Field = 'registeredAt' | 'warmup' | 'weight'
const KEYS: Record<Field, [string, string]> = {
  registeredAt: [METADATA_KEYS.registeredAt, METADATA_KEYS.dubboTimestamp],
  warmup: [METADATA_KEYS.warmup, METADATA_KEYS.dubboWarmup],
  weight: [METADATA_KEYS.weight, METADATA_KEYS.dubboWeight]
}
const MIN: Record<Field, number> = { registeredAt: 1, warmup: 0, weight: 0 }

/** What a key's value should parse to: a number, 'absent', 'reject', or 'oracle' (random input, see accepted()). */
type Want = number | 'absent' | 'reject' | 'oracle'

function entry (r: Random, field: Field): { raw: unknown, want: Want } {
  switch (r.int(0, 5)) {
    case 0: return { raw: undefined, want: 'absent' }
    case 1: return { raw: r.pick(['', null]), want: 'absent' }
    case 2: {
      const n = field === 'registeredAt' ? r.int(1, 2_000_000_000_000) : r.pick([r.int(MIN[field], 1_000_000), r.int(0, 100) + 0.5])
      const raw = r.pick([n, String(n), ` ${n}`, `${n} `, `\t${n}\n`])
      return { raw, want: n }
    }
    case 3: {
      // Clearly wrong: a number out of range, or not a number at all.
      const raw = r.pick<unknown>([
        'abc', '12abc', '1,000', '0x10', '--1', '1.2.3', '+', '-', '.', 'NaN', 'Infinity', '-Infinity', '1e400', '9'.repeat(400),
        -1, -0.5, '-5', ' -12 ', Infinity, -Infinity, Number.NaN, true, false, {}, [], [5], { value: 5 },
        ...(field === 'registeredAt' ? [0, '0', '-0'] : [])
      ])
      return { raw, want: 'reject' }
    }
    case 4: return { raw: r.value(2), want: 'oracle' }
    default: return { raw: r.nasty(20), want: 'oracle' }
  }
}

function metadata (r: Random) {
  const md: Record<string, unknown> = {}
  const expect: Partial<Record<Field, Array<{ key: string, raw: unknown, want: Want }>>> = {}
  for (const field of ['registeredAt', 'warmup', 'weight'] as const) {
    expect[field] = []
    for (const key of KEYS[field]) {
      const e = entry(r, field)
      if (e.raw !== undefined || r.bool(0.2)) md[key] = e.raw
      expect[field]!.push({ key, ...e })
    }
  }
  if (r.bool(0.3)) md[r.nasty(10)] = r.value(1)
  return { md, expect: expect as Record<Field, Array<{ key: string, raw: unknown, want: Want }>> }
}

/** The oracle for a value the generator could not classify (r.value()): is it a decimal in range? */
function accepted (raw: unknown, field: Field): number | undefined {
  const n = typeof raw === 'number' ? raw : typeof raw === 'string' && /^\s*-?\d+(\.\d+)?\s*$/.test(raw) ? Number(raw) : Number.NaN
  return Number.isFinite(n) && (field === 'registeredAt' ? n > 0 : n >= 0) ? n : undefined
}

const seed = seedFromEnv(20_251_125)

test('parseWarmupMetadata never throws and always returns a usable weight, warmup and registeredAt', () => {
  forAll('warmup metadata, any input', seed, 5_000, (r) => r.bool(0.1) ? r.value(3) : metadata(r).md, (md) => {
    const parsed = parseWarmupMetadata(md as Record<string, unknown>)
    assert.ok(Number.isFinite(parsed.weight) && parsed.weight >= 0, `weight ${parsed.weight}`)
    assert.ok(Number.isFinite(parsed.warmupMs) && parsed.warmupMs >= 0, `warmupMs ${parsed.warmupMs}`)
    assert.ok(parsed.registeredAt === undefined || (Number.isFinite(parsed.registeredAt) && parsed.registeredAt > 0), `registeredAt ${parsed.registeredAt}`)
    assert.ok(Array.isArray(parsed.problems) && parsed.problems.every((p) => typeof p === 'string'))
  })
})

test('lameduck keys win over Dubbo keys; a bad value falls back to the next key or the default, and is listed', () => {
  forAll('warmup metadata fallbacks', seed + 1, 5_000, metadata, ({ md, expect }) => {
    const parsed = parseWarmupMetadata(md)
    const got: Record<Field, number | undefined> = { registeredAt: parsed.registeredAt, warmup: parsed.warmupMs, weight: parsed.weight }
    const fallback: Record<Field, number | undefined> = { registeredAt: undefined, warmup: 0, weight: DEFAULT_WEIGHT }
    for (const field of ['registeredAt', 'warmup', 'weight'] as const) {
      let want = fallback[field]
      for (const e of expect[field]) {
        const present = e.raw !== undefined && e.raw !== null && e.raw !== ''
        const value = e.want === 'reject' || !present ? undefined : e.want === 'oracle' || e.want === 'absent' ? accepted(e.raw, field) : e.want
        if (present && value === undefined) {
          assert.ok(parsed.problems.some((p) => p.startsWith(`${e.key}=`)), `the bad ${e.key} is listed as a problem: ${JSON.stringify(parsed.problems)}`)
        }
        if (value !== undefined) { want = value; break }
      }
      assert.equal(got[field], want, `${field}`)
    }
    // Every problem names a key that was present.
    for (const p of parsed.problems) assert.ok(Object.keys(md).some((k) => p.startsWith(`${k}=`)), p)
  })
})

test('the documented bad inputs: warmup=abc and a negative weight give defaults and a warning', () => {
  const bad = parseWarmupMetadata({ 'lameduck.warmup': 'abc', 'lameduck.weight': '-5', 'lameduck.registeredAt': 'yesterday' })
  assert.equal(bad.warmupMs, 0)
  assert.equal(bad.weight, 100)
  assert.equal(bad.registeredAt, undefined)
  assert.equal(bad.problems.length, 3)
  const dubbo = parseWarmupMetadata({ 'lameduck.weight': '-5', weight: '40' })
  assert.equal(dubbo.weight, 40, 'the Dubbo key is the fallback for a bad lameduck key')
  assert.deepEqual(dubbo.problems, ['lameduck.weight="-5" is not a non-negative weight; ignored'])
})
