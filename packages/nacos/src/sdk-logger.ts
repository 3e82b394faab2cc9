import { format } from 'node:util'
import { redactedErrorCopy, redactText, type Logger } from '@lameduck/core'
import type { SdkLogger } from './sdk-types.ts'

/**
 * Routes the SDK's printf-style logging into a pino-compatible logger. The SDK
 * logs every push packet and registration at `info`, so its info becomes debug;
 * its warnings and errors keep their level. Its HTTP errors carry the request URL
 * with username, password, accessToken or ak/signature in the query: every line
 * and error is redacted, and errors are logged as a redacted copy (never the
 * HTTP client's error object, whose fields repeat the URL).
 */
export function sdkLogger (logger: Logger): SdkLogger {
  const route = (level: keyof Logger, sdkLevel: string) => (...args: unknown[]): void => {
    const [first, ...rest] = args
    if (first instanceof Error) {
      const err = redactedErrorCopy(first)
      logger[level]({ err, nacosSdk: sdkLevel }, `nacos sdk: ${err.message}`)
      return
    }
    logger[level]({ nacosSdk: sdkLevel }, `nacos sdk: ${redactText(format(first, ...rest))}`)
  }
  return { debug: route('debug', 'debug'), info: route('debug', 'info'), warn: route('warn', 'warn'), error: route('error', 'error') }
}
