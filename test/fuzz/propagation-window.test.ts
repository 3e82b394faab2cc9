// Property tests of core propagationWindow, the validation behind every `windows`
// option: any input gives a window that adds up, or an InvalidOptionError naming
// the option. Never another error, never a window that is not a finite duration.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { InvalidOptionError, propagationWindow, WINDOW_PARTS, WINDOW_PRESETS, type WindowParts } from '@lameduck/core'
import { forAll, seedFromEnv, type Random } from './prng.ts'

const PRESETS = Object.keys(WINDOW_PRESETS) as Array<keyof typeof WINDOW_PRESETS>

function anyWindows (r: Random): unknown {
  switch (r.int(0, 4)) {
    case 0: return r.value(2)
    case 1: return r.pick([...PRESETS, 'eureka', 'EUREKA-RIBBON', ' nacos', '', 'constructor', '__proto__', 'toString', 'hasOwnProperty'])
    default: {
      const o: Record<string, unknown> = {}
      for (let i = r.int(0, 5); i > 0; i--) {
        const key = r.pick([...WINDOW_PARTS, ...WINDOW_PARTS, 'preset', 'scale', 'scale', r.nasty(8), '__proto__', 'totalMs'])
        o[key] = r.bool(0.6) ? r.number() : key === 'preset' ? r.pick([...PRESETS, 'nope', 1, null]) : r.value(1)
      }
      return o
    }
  }
}

function validWindows (r: Random) {
  const parts: Partial<WindowParts> = {}
  for (const part of WINDOW_PARTS) if (r.bool()) parts[part] = r.pick([0, r.int(0, 120_000), r.next() * 60_000])
  const preset = r.bool(0.5) ? r.pick(PRESETS) : undefined
  const scale = r.bool(0.5) ? r.pick([0.01, 0.05, 0.5, 1, 2, r.next() * 3 + 0.001]) : undefined
  return { ...parts, ...(preset === undefined ? {} : { preset }), ...(scale === undefined ? {} : { scale }) }
}

function assertWindow (w: ReturnType<typeof propagationWindow>): void {
  assert.ok(Number.isFinite(w.totalMs) && w.totalMs >= 0, `totalMs ${w.totalMs} is a finite duration`)
  let total = 0
  for (const part of WINDOW_PARTS) {
    const ms = w.parts[part]
    assert.ok(Number.isFinite(ms) && ms >= 0, `${part} ${ms}`)
    total += ms
  }
  assert.equal(w.totalMs, total, 'the parts add up to the total')
  assert.deepEqual(w.breakdown.map((b) => b.part), WINDOW_PARTS.filter((p) => w.parts[p] > 0), 'the breakdown lists the non-zero parts in order')
}

const seed = seedFromEnv(20_251_127)

test('propagationWindow: any input gives a window that adds up, or an InvalidOptionError naming the option', () => {
  let rejected = 0
  forAll('propagationWindow, any input', seed, 10_000, anyWindows, (input) => {
    let w
    try {
      w = propagationWindow(input as never, 'windows')
    } catch (err) {
      assert.ok(err instanceof InvalidOptionError, `threw ${(err as Error)?.name}: ${(err as Error)?.message}`)
      assert.equal(err.code, 'LAMEDUCK_ERR_INVALID_OPTION')
      assert.match(err.option, /^windows(\.|$)/)
      assert.ok(err.message.startsWith(`${err.option}: `))
      rejected++
      return
    }
    assertWindow(w)
  })
  assert.ok(rejected > 1_000 && rejected < 9_500, `a mix of accepted and rejected inputs (${rejected} rejected)`)
})

test('propagationWindow: valid parts, presets and scales are accepted and scaled exactly', () => {
  forAll('propagationWindow, valid input', seed + 1, 5_000, validWindows, (input) => {
    const w = propagationWindow(input)
    assertWindow(w)
    const base = input.preset === undefined ? {} : WINDOW_PRESETS[input.preset]
    const scale = input.scale ?? 1
    for (const part of WINDOW_PARTS) {
      const raw = (input as Partial<WindowParts>)[part] ?? (base as Partial<WindowParts>)[part] ?? 0
      assert.equal(w.parts[part], scale === 1 ? raw : Math.round(raw * scale), part)
    }
  })
})

test('parts that overflow when added or scaled are rejected, not turned into an endless window', () => {
  for (const input of [
    { serverCacheMs: Number.MAX_VALUE, clientFetchMs: Number.MAX_VALUE },
    { clientFetchMs: Number.MAX_VALUE, scale: 10 },
    { preset: 'eureka-ribbon' as const, scale: Number.MAX_VALUE }
  ]) {
    assert.throws(() => propagationWindow(input), (err: unknown) => err instanceof InvalidOptionError && /^windows/.test(err.option), JSON.stringify(input))
  }
})
