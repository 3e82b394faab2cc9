// A typed bridge to eureka-js-client (CommonJS, callbacks, no types): the
// constructor, a promise over its request helper, and its logger routed into ours.
import type { EventEmitter } from 'node:events'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { redactedErrorCopy, redactError, redactText, type Logger } from '@lameduck/core'

/** An instance as eureka-js-client sends and receives it (Eureka JSON). */
export interface EurekaInstanceJson {
  app: string
  instanceId?: string
  hostName?: string
  ipAddr?: string
  status?: string
  port?: { $: number | string, '@enabled'?: boolean | string } | number | string
  vipAddress?: string
  metadata?: Record<string, unknown>
  [field: string]: unknown
}

export interface EurekaRequestOptions {
  method?: 'GET' | 'POST' | 'PUT' | 'DELETE'
  /** Relative to the apps URL, e.g. 'ORDERS/orders-1/status'. */
  uri: string
  qs?: Record<string, string>
  headers?: Record<string, string>
}

export interface EurekaJsClient extends EventEmitter {
  config: { instance: EurekaInstanceJson, eureka: Record<string, unknown> }
  cache: { app: Record<string, EurekaInstanceJson[]>, vip: Record<string, EurekaInstanceJson[]> }
  /** The fetch interval, set by start(). */
  registryFetch?: { unref?(): unknown }
  start(cb: (err?: Error | null) => void): void
  register(cb: (err?: Error | null) => void): void
  fetchRegistry(cb: (err?: Error | null) => void): void
  /** Internal: turns a parsed full-registry body into the cache (wrapped by the discovery view). */
  transformRegistry?(registry: unknown): void
  eurekaRequest(opts: EurekaRequestOptions, cb: (err: Error | null, response: { statusCode: number } | undefined, body: unknown) => void): void
}

export type EurekaJsClientConstructor = new (config: object) => EurekaJsClient

const require = createRequire(import.meta.url)
export const EurekaJs = (require('eureka-js-client') as { Eureka: EurekaJsClientConstructor }).Eureka

/**
 * eureka-js-client merges `${cwd}/eureka-client.yml` and `eureka-client-${env}.yml`
 * into its config, with cwd defaulting to process.cwd(). Pointing it at this
 * package's own folder, which holds no such file, keeps a stray YAML in the
 * user's working directory from changing the config behind their back.
 */
export const NO_YAML_DIR = fileURLToPath(new URL('.', import.meta.url))

/** Promise over client.eurekaRequest (cluster URL rotation, middleware, retries on network errors and 5xx). */
export function eurekaRequest (client: EurekaJsClient, opts: EurekaRequestOptions): Promise<{ statusCode: number, body: string }> {
  return new Promise((resolve, reject) => {
    client.eurekaRequest(opts, (err, response, body) => {
      if (err) { reject(redactError(err)); return }
      resolve({ statusCode: response?.statusCode ?? 0, body: typeof body === 'string' ? body : body === undefined || body === null ? '' : JSON.stringify(body) })
    })
  })
}

export function callback (fn: (cb: (err?: Error | null) => void) => void): Promise<void> {
  return new Promise((resolve, reject) => fn((err) => err ? reject(redactError(err)) : resolve()))
}

// Per-attempt messages the adapter summarises itself (it logs the final outcome
// and its own retries), so they go to debug instead of flooding warn/error.
const PER_ATTEMPT = /^(Problem making eureka request|Eureka request failed to endpoint|Error registering with eureka|Error deregistering|Error fetching registry|Error starting the Eureka Client|It looks like it's taking a while)/

/**
 * eureka-js-client's logger interface, writing into a pino-compatible logger.
 * Its lines name the request URL, credentials included: every line and error is redacted.
 */
export function clientLogger (logger: Logger): Record<'debug' | 'info' | 'warn' | 'error', (...args: unknown[]) => void> {
  const emit = (level: 'debug' | 'warn' | 'error') => (...args: unknown[]): void => {
    const err = args.find((a): a is Error => a instanceof Error)
    const msg = redactText(args.filter((a) => typeof a === 'string').join(' ').replace(/\s+/g, ' ').trim())
    const effective = PER_ATTEMPT.test(msg) ? 'debug' : level
    const fields: Record<string, unknown> = { component: 'eureka-js-client' }
    const safe = err === undefined ? undefined : redactedErrorCopy(err)
    if (safe !== undefined) fields.err = safe
    logger[effective](fields, `eureka-js-client: ${msg}${safe !== undefined ? `: ${safe.message}` : ''}`)
  }
  // The client's info lines ("registered with eureka", "retrieved full registry") repeat what the adapter reports.
  return { debug: emit('debug'), info: emit('debug'), warn: emit('warn'), error: emit('error') }
}

/** A short description of a failed call for logs and errors (redacted). */
export function describeFailure (err: unknown): string {
  if (err instanceof Error) {
    const code = (err as NodeJS.ErrnoException).code
    return redactText(code !== undefined && !err.message.includes(code) ? `${code}: ${err.message}` : err.message)
  }
  return redactText(String(err))
}
