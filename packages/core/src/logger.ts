// The subset of pino's API lameduck logs through. A Fastify `app.log` or any pino
// logger fits; the default drops everything.
export interface Logger {
  debug(obj: object, msg?: string): void
  info(obj: object, msg?: string): void
  warn(obj: object, msg?: string): void
  error(obj: object, msg?: string): void
}

const noop = (): void => {}
export const silentLogger: Logger = { debug: noop, info: noop, warn: noop, error: noop }
