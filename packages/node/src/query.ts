import { InvalidOptionError } from '@lameduck/core'

const TRUE = new Set(['true', '1', 'yes', 'on'])
const FALSE = new Set(['false', '0', 'no', 'off'])

/**
 * A boolean query parameter: the usual spellings (true/false, 1/0, yes/no,
 * on/off, any case) and a bare `?name` for true. Anything else, an empty
 * `name=` or a repeated parameter is an error naming it: a typo must not
 * silently decide whether a preStop hook waits for the drain.
 */
export function booleanParam (rawUrl: string, name: string, fallback: boolean): boolean {
  const q = rawUrl.indexOf('?')
  if (q === -1) return fallback
  const values: Array<string | null> = []
  for (const part of rawUrl.slice(q + 1).split('&')) {
    const eq = part.indexOf('=')
    const key = decode(eq === -1 ? part : part.slice(0, eq))
    if (key === name) values.push(eq === -1 ? null : decode(part.slice(eq + 1)))
  }
  if (values.length === 0) return fallback
  const hint = `?${name}= must be true or false (also 1/0, yes/no, on/off, any case, or a bare ?${name})`
  if (values.length > 1) throw new InvalidOptionError(name, `${hint}, got it ${values.length} times`)
  const value = values[0]!
  if (value === null) return true
  const v = value.toLowerCase()
  if (TRUE.has(v)) return true
  if (FALSE.has(v)) return false
  throw new InvalidOptionError(name, `${hint}, got ${JSON.stringify(value.slice(0, 40))}`)
}

function decode (s: string): string {
  try { return decodeURIComponent(s.replaceAll('+', ' ')) } catch { return s }
}
