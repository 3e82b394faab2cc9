// Flags of the devkit CLIs: the text of a numeric flag becomes a number here
// (naming the flag); whether the number is in range is checked once, by the
// options it feeds, and asFlags() renames that error to the flag the user typed.
import { InvalidOptionError } from '@lameduck/core'

/** The number a flag's text spells, or an InvalidOptionError naming the flag. */
export function numeric (flag: string, raw: string): number {
  const n = Number(raw)
  if (raw.trim() === '' || !Number.isFinite(n)) throw new InvalidOptionError(flag, `must be a number, got '${raw}'`)
  return n
}

/**
 * Runs `start`; an InvalidOptionError about an option that `flags` maps from a
 * flag (option name → '--flag') is re-thrown naming the flag instead.
 */
export async function asFlags<T> (flags: Readonly<Record<string, string>>, start: () => Promise<T>): Promise<T> {
  try {
    return await start()
  } catch (err) {
    if (!(err instanceof InvalidOptionError)) throw err
    const [, base = err.option, index = ''] = /^([^[]+)(\[\d+\])?$/.exec(err.option) ?? []
    const flag = flags[base]
    if (flag === undefined) throw err
    throw new InvalidOptionError(`${flag}${index}`, err.message.slice(err.option.length + 2), { cause: err })
  }
}

/** Exit code and message for an error out of a devkit CLI: 2 and a pointer to --help for bad input (as the lameduck CLI does), 1 otherwise. */
export function cliFailure (command: string, err: unknown): { code: 1 | 2, message: string } {
  const e = err as Error & { code?: string }
  const usage = e.code === 'LAMEDUCK_ERR_INVALID_OPTION' || (typeof e.code === 'string' && e.code.startsWith('ERR_PARSE_ARGS'))
  if (usage) return { code: 2, message: `lameduck-devkit ${command}: ${e.message}\nRun 'lameduck-devkit ${command} --help' for its options.\n` }
  return { code: 1, message: `lameduck-devkit ${command}: ${e.code ? `[${e.code}] ` : ''}${e.message}\n` }
}
