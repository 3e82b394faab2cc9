// A tiny seeded PRNG (mulberry32) and generators for property tests and seeded
// jitter. Same seed, same cases: a failure message prints the seed and the case
// number, and `LAMEDUCK_FUZZ_SEED=<seed> node scripts/test.ts test/fuzz` replays it.

/** mulberry32: 32-bit state, good enough spread for test inputs, and reproducible. */
export function prng (seed: number): Random {
  let s = seed >>> 0
  const next = (): number => {
    s = (s + 0x6d2b79f5) >>> 0
    let t = s
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
  return new Random(next)
}

export class Random {
  readonly next: () => number
  constructor (next: () => number) { this.next = next }

  /** Integer in [min, max]. */
  int (min: number, max: number): number { return min + Math.floor(this.next() * (max - min + 1)) }
  bool (p = 0.5): boolean { return this.next() < p }
  pick<T> (list: readonly T[]): T { return list[Math.floor(this.next() * list.length)]! }
  array<T> (min: number, max: number, item: (i: number) => T): T[] { return Array.from({ length: this.int(min, max) }, (_, i) => item(i)) }

  /** A string from `alphabet`, length in [min, max]. */
  string (min: number, max: number, alphabet = ALPHABET): string {
    let out = ''
    const n = this.int(min, max)
    for (let i = 0; i < n; i++) out += alphabet[Math.floor(this.next() * alphabet.length)]
    return out
  }

  /** Mostly printable ASCII, sometimes control characters, unicode and lone surrogates. */
  nasty (max = 40): string {
    return this.string(0, max, this.bool(0.7) ? ALPHABET : NASTY)
  }

  /** A number a careless parser would mishandle. */
  number (): number {
    return this.pick([
      0, -0, 1, -1, 0.5, -0.5, 100, 1e3, 2 ** 31, 2 ** 53, 2 ** 53 + 2, Number.MAX_SAFE_INTEGER, Number.MAX_VALUE, Number.MIN_VALUE,
      Number.EPSILON, Infinity, -Infinity, Number.NaN, this.int(-1_000_000, 1_000_000), this.next() * 1e6, -this.next() * 1e6, 1e308 * this.next()
    ])
  }

  /** Any JSON-ish or JS value, nested up to `depth`; `jsonSafe` leaves out what JSON cannot carry. */
  value (depth = 2, jsonSafe = false): unknown {
    let kind = this.int(0, depth > 0 ? 11 : 8)
    if (jsonSafe && (kind === 0 || kind === 7 || kind === 11)) kind = 4
    switch (kind) {
      case 0: return undefined
      case 1: return null
      case 2: return this.bool()
      case 3: return this.number()
      case 4: return this.nasty()
      case 5: return String(this.number())
      case 6: return ` ${this.int(-100, 100_000)} `
      case 7: return this.pick([10n, Symbol('x'), () => 1, new Date(0)])
      case 8: return ''
      case 9: return this.array(0, 4, () => this.value(depth - 1, jsonSafe))
      case 10: {
        const o: Record<string, unknown> = {}
        for (let i = this.int(0, 4); i > 0; i--) o[this.pick(KEYS)] = this.value(depth - 1, jsonSafe)
        return o
      }
      default: {
        const circular: Record<string, unknown> = { a: 1 }
        circular.self = circular
        return circular
      }
    }
  }
}

export const ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-.:{}[]",=#\\/+eE\n\t'
const NASTY = '\u0000\u0001\r\n\t\u00a0\u2028\u2029\ud800\udfff\ufeff😀é{}":,=#\\ '
const KEYS = ['name', 'value', 'stats', 'hosts', 'ip', 'port', 'metadata', '__proto__', 'constructor', 'toString', 'a', 'b']

/** JSON.stringify that never throws (circular, BigInt): for building bodies from value(). */
export function json (value: unknown): string {
  try {
    return JSON.stringify(value) ?? 'null'
  } catch {
    return '{"circular":'
  }
}

/** The seed for this run: LAMEDUCK_FUZZ_SEED, else a fixed one (CI stays deterministic). */
export function seedFromEnv (fallback: number): number {
  const raw = process.env.LAMEDUCK_FUZZ_SEED
  return raw !== undefined && /^\d+$/.test(raw) ? Number(raw) : fallback
}

/**
 * Runs `property` on `cases` generated inputs. On the first failure, rethrows with
 * the seed, the case number and the input, so the failing case can be replayed.
 */
export function forAll<T> (name: string, seed: number, cases: number, generate: (r: Random, i: number) => T, property: (input: T, i: number) => void): void {
  const r = prng(seed)
  for (let i = 0; i < cases; i++) {
    const input = generate(r, i)
    try {
      property(input, i)
    } catch (err) {
      const shown = show(input)
      const e = new Error(`${name}: case ${i} of seed ${seed} failed: ${(err as Error)?.message ?? String(err)}\ninput: ${shown}`, { cause: err })
      throw e
    }
  }
}

/** forAll for async properties. */
export async function forAllAsync<T> (name: string, seed: number, cases: number, generate: (r: Random, i: number) => T, property: (input: T, i: number) => Promise<void>): Promise<void> {
  const r = prng(seed)
  for (let i = 0; i < cases; i++) {
    const input = generate(r, i)
    try {
      await property(input, i)
    } catch (err) {
      throw new Error(`${name}: case ${i} of seed ${seed} failed: ${(err as Error)?.message ?? String(err)}\ninput: ${show(input)}`, { cause: err })
    }
  }
}

function show (value: unknown): string {
  const seen = new WeakSet()
  try {
    const text = typeof value === 'string'
      ? JSON.stringify(value)
      : JSON.stringify(value, (_k, v: unknown) => {
        if (typeof v === 'bigint') return `${v}n`
        if (typeof v === 'symbol' || typeof v === 'function') return String(v)
        if (typeof v === 'number' && !Number.isFinite(v)) return String(v)
        if (typeof v === 'object' && v !== null) { if (seen.has(v)) return '[circular]'; seen.add(v) }
        return v
      })
    return text === undefined ? String(value) : text.length > 2_000 ? `${text.slice(0, 2_000)}…` : text
  } catch {
    return String(value)
  }
}
