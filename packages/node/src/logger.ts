import type { Logger } from '@lameduck/core'

const LEVELS = { debug: 20, info: 30, warn: 40, error: 50 } as const
type Level = keyof typeof LEVELS

export interface StderrLoggerOptions {
  /** 'text' (default): one readable line per event; 'json': pino-shaped JSON lines. From LAMEDUCK_LOG when unset. */
  format?: 'text' | 'json'
  /** Where lines go (process.stderr). */
  write?: (line: string) => void
}

/**
 * The logger when none is given: from `info` up, on stderr, so what lameduck
 * did during a deploy is never silent. Readable lines by default
 * (`12:00:01.234 INFO  lameduck: serving -> draining (SIGTERM, ...)`), so an app
 * need not print the transitions itself; `LAMEDUCK_LOG=json` gives pino-shaped
 * JSON lines with every field (the `lameduck` object, `lameduck.component` on
 * the admin listener's lines) for a log pipeline. Passing the app's own pino
 * logger (or Fastify's `app.log`) routes them with the rest instead.
 */
export function stderrLogger (options: StderrLoggerOptions = {}): Logger {
  const format = options.format ?? (process.env.LAMEDUCK_LOG === 'json' ? 'json' : 'text')
  const write = options.write ?? ((line: string) => { process.stderr.write(line) })
  return make(format, write, {})
}

function make (format: 'text' | 'json', write: (line: string) => void, bindings: Record<string, unknown>): Logger {
  const line = (level: Level) => (obj: object, msg?: string): void => {
    if (LEVELS[level] < LEVELS.info) return
    const fields = merge(bindings, obj instanceof Error ? { err: obj } : obj)
    write(format === 'json' ? json(level, fields, msg) : text(level, fields, msg))
  }
  const logger: Logger & { child: (b: Record<string, unknown>) => Logger } = {
    debug: line('debug'),
    info: line('info'),
    warn: line('warn'),
    error: line('error'),
    child: (b) => make(format, write, merge(bindings, b))
  }
  return logger
}

/** Bindings then the line's own fields; the `lameduck` objects of both are merged, not replaced. */
function merge (a: Record<string, unknown>, b: object): Record<string, unknown> {
  const out: Record<string, unknown> = { ...a, ...b }
  const la = a.lameduck
  const lb = (b as { lameduck?: unknown }).lameduck
  if (isObject(la) && isObject(lb)) out.lameduck = { ...la, ...lb }
  return out
}

function isObject (v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function json (level: Level, fields: Record<string, unknown>, msg: string | undefined): string {
  const err = fields.err
  const out = err instanceof Error ? { ...fields, err: { message: err.message, stack: err.stack } } : fields
  return JSON.stringify({ level: LEVELS[level], time: Date.now(), ...out, msg }) + '\n'
}

/** `HH:MM:SS.mmm LEVEL message`, and an error's first stack frame under a warning or error. */
function text (level: Level, fields: Record<string, unknown>, msg: string | undefined): string {
  const time = new Date().toISOString().slice(11, 23)
  const err = fields.err
  const detail = err instanceof Error && (level === 'warn' || level === 'error') && !(msg ?? '').includes(err.message)
    ? `\n    ${err.name}: ${err.message}`
    : ''
  return `${time} ${level.toUpperCase().padEnd(5)} ${msg ?? ''}${detail}\n`
}
