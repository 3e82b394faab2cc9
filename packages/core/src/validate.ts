// The one validation kit of the house: each check names the option, says what
// would be accepted and shows what it got. Options are validated once, at the
// outermost public edge; inner code trusts the resolved values.
import { BACKOFF_DEFAULTS, type BackoffOptions } from './backoff.ts'
import { InvalidOptionError } from './errors.ts'
import { redactText, redactUrl } from './redact.ts'

/** Node runs a timer longer than this after 1 ms, so a longer duration would fire at once. */
export const MAX_DURATION_MS = 2 ** 31 - 1

/** A value for an error message: strings and URLs redacted (a URL may carry credentials), objects named, not dumped. */
export function show (value: unknown): string {
  if (value === null) return 'null'
  if (typeof value === 'string') return `'${redactText(value)}'`
  if (value instanceof URL) return `'${redactUrl(value)}'`
  if (Array.isArray(value)) return 'an array'
  if (typeof value === 'object') return 'an object'
  if (value === undefined) return 'undefined'
  return `${typeof value} ${String(value)}`
}

/** Throws unless `value` is a finite, non-negative number of milliseconds that a timer can wait. */
export function assertDuration (option: string, value: unknown, { positive = false } = {}): asserts value is number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || (positive && value === 0)) {
    throw new InvalidOptionError(option, `must be a ${positive ? 'positive' : 'non-negative'} number of milliseconds, got ${show(value)}`)
  }
  if (value > MAX_DURATION_MS) {
    throw new InvalidOptionError(option, `${value} ms is longer than a timer can wait (${MAX_DURATION_MS} ms, about 24.8 days); use a realistic duration`)
  }
}

/** A number of milliseconds, `fallback` when undefined. */
export function duration (option: string, value: unknown, fallback: number, opts: { positive?: boolean } = {}): number {
  const v = value ?? fallback
  assertDuration(option, v, opts)
  return v
}

/** An integer >= `min` (default 0), `fallback` when undefined. */
export function count (option: string, value: unknown, fallback: number, { min = 0, max = Number.MAX_SAFE_INTEGER } = {}): number {
  const v = value ?? fallback
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? (min === 0 ? 'a non-negative integer' : `an integer >= ${min}`) : `an integer from ${min} to ${max}`
    throw new InvalidOptionError(option, `must be ${range}, got ${show(v)}`)
  }
  return v
}

/** true or false, `fallback` when undefined. */
export function flag (option: string, value: unknown, fallback: boolean): boolean {
  const v = value ?? fallback
  if (typeof v !== 'boolean') throw new InvalidOptionError(option, `must be true or false, got ${show(v)}`)
  return v
}

/** One of `allowed`, `fallback` when undefined. */
export function oneOf<T extends string | boolean | number> (option: string, value: unknown, allowed: readonly T[], fallback: T): T {
  const v = value ?? fallback
  if (!allowed.includes(v as T)) {
    throw new InvalidOptionError(option, `must be one of ${allowed.map((a) => typeof a === 'string' ? `'${a}'` : String(a)).join(', ')}; got ${show(v)}`)
  }
  return v as T
}

/** A finite number in [min, max] (`above`: strictly greater than min), `fallback` when undefined. */
export function number (option: string, value: unknown, fallback: number, { min = 0, max = Infinity, above = false, hint = '' } = {}): number {
  const v = value ?? fallback
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || (above && v === min) || v > max) {
    const range = max === Infinity ? `${above ? '>' : '>='} ${min}` : `from ${min} to ${max}`
    throw new InvalidOptionError(option, `must be a number ${range}${hint}, got ${show(v)}`)
  }
  return v
}

/** A plain object (not null, not an array); `example` shows the expected shape. */
export function record (option: string, value: unknown, example: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidOptionError(option, `must be an object like ${example}, got ${show(value)}`)
  }
  return value as Record<string, unknown>
}

/** A function; `example` shows what to pass. */
export function fn<F extends (...args: never[]) => unknown> (option: string, value: unknown, example: string): F {
  if (typeof value !== 'function') throw new InvalidOptionError(option, `must be a function such as ${example}, got ${show(value)}`)
  return value as F
}

/**
 * An object with the `methods` named (a duck-typed interface: a logger, a clock,
 * a registry). `what` names what fits, e.g. 'a Clock (systemClock or virtualClock())'.
 */
export function withMethods<T> (option: string, value: unknown, methods: readonly string[], what: string): T {
  const missing = typeof value === 'object' && value !== null
    ? methods.find((m) => typeof (value as Record<string, unknown>)[m] !== 'function')
    : methods[0]
  if (missing !== undefined) {
    const got = typeof value === 'object' && value !== null ? `its ${missing}() is missing` : `got ${show(value)}`
    throw new InvalidOptionError(option, `must be ${what} with ${methods.map((m) => `${m}()`).join(', ')}; ${got}`)
  }
  return value as T
}

/** An http(s) URL (a string or URL). `example` goes into the message as the shape to follow. */
export function url (option: string, value: unknown, example: string): URL {
  let parsed: URL
  try {
    if (typeof value !== 'string' && !(value instanceof URL)) throw new TypeError('not a string')
    parsed = new URL(String(value))
  } catch {
    throw new InvalidOptionError(option, `must be an http:// URL such as '${example}', got ${show(value)}`)
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new InvalidOptionError(option, `must be an http:// or https:// URL such as '${example}', got ${show(value)}`)
  }
  return parsed
}

const BACKOFF_KEYS = { initialMs: true, maxMs: true, factor: true, jitter: true } satisfies Record<keyof BackoffOptions, true>

/** BackoffOptions with every part set and in range; unset parts from `defaults`, then BACKOFF_DEFAULTS. */
export function backoff (option: string, value: unknown, defaults: BackoffOptions = {}): Required<BackoffOptions> {
  const given = record(option, value ?? {}, '{ initialMs: 250, maxMs: 15000, factor: 2, jitter: 0.2 }')
  checkKeys(option, given, BACKOFF_KEYS)
  const d = { ...BACKOFF_DEFAULTS, ...defaults }
  return {
    initialMs: duration(`${option}.initialMs`, given.initialMs, d.initialMs),
    maxMs: duration(`${option}.maxMs`, given.maxMs, d.maxMs),
    factor: number(`${option}.factor`, given.factor, d.factor, { min: 1, hint: ' (the growth per attempt)' }),
    jitter: number(`${option}.jitter`, given.jitter, d.jitter, { max: 1, hint: ' (the random spread)' })
  }
}

/**
 * Rejects keys that `known` does not list, with a "did you mean" hint. Declare
 * `known` as `{ a: true, b: true } satisfies Record<keyof Options, true | 'deprecated'>`
 * so the compiler keeps it in step with the option type. A `'deprecated'` key is
 * accepted but never suggested or listed: a typo should lead to the current name.
 */
export function checkKeys (where: string, options: object, known: Readonly<Record<string, true | 'deprecated'>>, hint = ''): void {
  for (const key of Object.keys(options)) {
    if (Object.hasOwn(known, key)) continue
    const current = Object.keys(known).filter((k) => known[k] === true)
    const guess = closest(key, current)
    const option = where === '' ? key : `${where}.${key}`
    throw new InvalidOptionError(option, `unknown option${guess ? ` (did you mean '${guess}'?)` : ''}; known options are ${current.join(', ')}${hint}`)
  }
}

/**
 * Reads a renamed option: the new name wins; the old one still works and warns
 * once per call. Both set to different values is an error, since one would be
 * silently ignored.
 */
export function deprecatedAlias<O extends object> (options: O, oldName: keyof O & string, newName: keyof O & string, warn: (message: string) => void): unknown {
  const oldValue = options[oldName]
  const newValue = options[newName]
  if (oldValue === undefined) return newValue
  if (newValue !== undefined && newValue !== oldValue) {
    throw new InvalidOptionError(oldName, `is the deprecated name of '${newName}'; set only '${newName}' (got both: ${show(oldValue)} and ${show(newValue)})`)
  }
  warn(`option '${oldName}' is deprecated; use '${newName}' (same value, same unit)`)
  return oldValue
}

/** The candidate nearest to `name` if within `maxDistance` edits (case-insensitive), for "did you mean" hints. */
export function closest (name: string, candidates: readonly string[], maxDistance = 3): string | undefined {
  let best: string | undefined
  let bestScore = Infinity
  for (const c of candidates) {
    const score = editDistance(name.toLowerCase(), c.toLowerCase())
    if (score < bestScore) { best = c; bestScore = score }
  }
  return bestScore <= maxDistance ? best : undefined
}

function editDistance (a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i)
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!
    row[0] = i
    for (let j = 1; j <= b.length; j++) {
      const tmp = row[j]!
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1))
      prev = tmp
    }
  }
  return row[b.length]!
}
