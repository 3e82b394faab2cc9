import type { Logger } from '@lameduck/core'

const LEVELS = { debug: 20, info: 30, warn: 40, error: 50 } as const

/**
 * The logger when none is given: pino-shaped JSON lines on stderr from `info`
 * up, so what lameduck did during a deploy is never silent. Pass your app's
 * pino logger (or a Fastify `app.log`) to route them with the rest.
 */
export function stderrLogger (): Logger {
  const line = (level: keyof typeof LEVELS) => (obj: object, msg?: string): void => {
    if (LEVELS[level] < LEVELS.info) return
    const fields = obj instanceof Error ? { err: { message: obj.message, stack: obj.stack } } : errorFields(obj)
    process.stderr.write(JSON.stringify({ level: LEVELS[level], time: Date.now(), ...fields, msg }) + '\n')
  }
  return { debug: line('debug'), info: line('info'), warn: line('warn'), error: line('error') }
}

function errorFields (obj: object): object {
  const err = (obj as { err?: unknown }).err
  return err instanceof Error ? { ...obj, err: { message: err.message, stack: err.stack } } : obj
}
