import { format } from 'node:util'
import type { Logger } from '@lameduck/core'
import type { SdkLogger } from './sdk-types.ts'

/**
 * Routes the SDK's printf-style logging into a pino-compatible logger. The SDK
 * logs every push packet and registration at `info`, so its info becomes debug;
 * its warnings and errors keep their level.
 */
export function sdkLogger (logger: Logger): SdkLogger {
  const route = (level: keyof Logger, sdkLevel: string) => (...args: unknown[]): void => {
    const [first, ...rest] = args
    if (first instanceof Error) {
      logger[level]({ err: first, nacosSdk: sdkLevel }, `nacos sdk: ${first.message}`)
      return
    }
    logger[level]({ nacosSdk: sdkLevel }, `nacos sdk: ${format(first, ...rest)}`)
  }
  return { debug: route('debug', 'debug'), info: route('debug', 'info'), warn: route('warn', 'warn'), error: route('error', 'error') }
}
