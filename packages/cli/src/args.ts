// Flag parsing shared by the commands: node:util parseArgs with errors that say
// what to fix, and conversions for the units the flags use (seconds, ms, URLs).
import { parseArgs, type ParseArgsOptionsConfig } from 'node:util'
import { InvalidOptionError, LameduckError } from '@lameduck/core'

/** Bad flags or arguments: the CLI prints the message and exits with EXIT.USAGE. */
export class UsageError extends LameduckError {
  constructor (message: string) {
    super('LAMEDUCK_ERR_USAGE', message)
    this.name = 'UsageError'
  }
}

/** Runs one of core's option checks on a flag: its InvalidOptionError (which names the flag) becomes a UsageError. */
export function checkFlag<T> (check: () => T): T {
  try {
    return check()
  } catch (err) {
    if (err instanceof InvalidOptionError) throw new UsageError(err.message)
    throw err
  }
}

export type FlagValues = Record<string, string | boolean | string[] | undefined>

/** Parses `argv` strictly. Unknown flags, missing values and stray positionals become UsageErrors. */
export function parseFlags (argv: string[], options: ParseArgsOptionsConfig, positionals = false): { values: FlagValues, positionals: string[] } {
  try {
    const parsed = parseArgs({ args: argv, options, allowPositionals: positionals, strict: true })
    return { values: parsed.values as FlagValues, positionals: parsed.positionals }
  } catch (err) {
    const e = err as NodeJS.ErrnoException
    if (typeof e.code === 'string' && e.code.startsWith('ERR_PARSE_ARGS')) throw new UsageError(tidy(e.message))
    throw err
  }
}

// parseArgs messages are good but long-winded about `--` escapes; keep the first sentence.
function tidy (message: string): string {
  return message.split('\n')[0]!.split('. To specify')[0]!.split('. Use')[0]!.replace(/\.$/, '')
}

export function stringFlag (values: FlagValues, name: string): string | undefined {
  const v = values[name]
  return typeof v === 'string' ? v : undefined
}

/**
 * The longest duration a flag takes: one day. Node's timers hold at most 2^31-1 ms
 * (24.8 days) and fire after 1 ms beyond that, so an unbounded --timeout would end at once.
 */
export const MAX_FLAG_SECONDS = 86_400
export const MAX_FLAG_MS = MAX_FLAG_SECONDS * 1000

/** A non-negative number of seconds (decimals allowed), at most MAX_FLAG_SECONDS → ms. */
export function secondsFlag (values: FlagValues, name: string, fallbackSeconds: number): number {
  const raw = stringFlag(values, name)
  if (raw === undefined) return fallbackSeconds * 1000
  const n = Number(raw.replace(/s$/, ''))
  if (raw.trim() === '' || !Number.isFinite(n) || n < 0) throw new UsageError(`--${name} must be a number of seconds, e.g. --${name} 30 (got '${raw}')`)
  if (n > MAX_FLAG_SECONDS) throw new UsageError(`--${name} must be at most ${MAX_FLAG_SECONDS} seconds (24 h), e.g. --${name} 300 (got '${raw}')`)
  return Math.round(n * 1000)
}

/** A non-negative integer, e.g. milliseconds or a count; `max` bounds it (durations: MAX_FLAG_MS). */
export function integerFlag (values: FlagValues, name: string, what = 'a non-negative integer', max = Number.MAX_SAFE_INTEGER): number | undefined {
  const raw = stringFlag(values, name)
  if (raw === undefined) return undefined
  const n = Number(raw)
  if (raw.trim() === '' || !Number.isInteger(n) || n < 0) throw new UsageError(`--${name} must be ${what} (got '${raw}')`)
  if (n > max) throw new UsageError(`--${name} must be at most ${max}${max === MAX_FLAG_MS ? ' ms (24 h)' : ''} (got '${raw}')`)
  return n
}

/** A duration in milliseconds: a non-negative integer, at most MAX_FLAG_MS. */
export function msFlag (values: FlagValues, name: string): number | undefined {
  return integerFlag(values, name, 'a non-negative integer of milliseconds', MAX_FLAG_MS)
}

/** An http(s) URL; a bare `host:port` gets `http://`. */
export function urlFlag (name: string, raw: string): URL {
  const text = /^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `http://${raw}`
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new UsageError(`--${name} must be a URL like http://127.0.0.1:54199 (got '${raw}')`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`--${name} must be an http:// or https:// URL (got '${raw}')`)
  return url
}

export function formatSeconds (ms: number): string {
  // Tenths, without a trailing .0: a 3 ms step reads "0 s", not "0.0 s".
  const tenths = Math.round(ms / 100)
  return `${tenths % 10 === 0 ? tenths / 10 : (tenths / 10).toFixed(1)} s`
}
