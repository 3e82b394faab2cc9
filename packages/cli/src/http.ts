// Small HTTP helpers over undici for the commands that talk to the app: one
// private Agent per command run (closed at the end), JSON answers, and network
// errors turned into a sentence a person can act on.
import { Agent, request, type Dispatcher } from 'undici'
import { LameduckError, networkErrorCode, networkErrorKind } from '@lameduck/core'

export interface HttpAnswer {
  status: number
  /** Parsed body when it was JSON, else undefined. */
  json: Record<string, unknown> | undefined
  text: string
}

export interface HttpOptions {
  method?: 'GET' | 'POST'
  token?: string | undefined
  signal?: AbortSignal
  /** Bound on headers and body; 0 = none (a blocking /offline?wait=true). */
  timeoutMs: number
  /** Largest body read; a larger one fails with AnswerTooLargeError. Default MAX_ANSWER_BYTES. */
  maxBytes?: number
}

/** The admin listener's and readiness answers are a few KB: a body past this is not one of them. */
export const MAX_ANSWER_BYTES = 1024 * 1024

/** The answer's body was larger than the cap (read no further: it could be endless). */
export class AnswerTooLargeError extends LameduckError {
  constructor (url: URL, maxBytes: number) {
    super('LAMEDUCK_ERR_ANSWER_TOO_LARGE', `the answer from ${url.host}${url.pathname} is larger than ${formatBytes(maxBytes)}, more than any lameduck answer; check that the URL points at the app's lameduck admin listener or readiness route`)
    this.name = 'AnswerTooLargeError'
  }
}

function formatBytes (n: number): string {
  return n >= 1024 * 1024 ? `${n / (1024 * 1024)} MiB` : n >= 1024 ? `${n / 1024} KiB` : `${n} bytes`
}

/** An Agent whose own timeouts never fire: every request sets its own bound. */
export function createAgent (): Agent {
  return new Agent({ headersTimeout: 0, bodyTimeout: 0, connectTimeout: 5_000, keepAliveTimeout: 2_000 })
}

export async function call (dispatcher: Dispatcher, url: URL, options: HttpOptions): Promise<HttpAnswer> {
  const headers: Record<string, string> = { accept: 'application/json' }
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`
  const res = await request(url, {
    dispatcher,
    method: options.method ?? 'GET',
    headers,
    signal: options.signal,
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs
  })
  const text = await readCapped(res.body, url, options.maxBytes ?? MAX_ANSWER_BYTES, res.headers['content-length'])
  let json: Record<string, unknown> | undefined
  if (String(res.headers['content-type'] ?? '').includes('json')) {
    try {
      const parsed: unknown = JSON.parse(text)
      if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) json = parsed as Record<string, unknown>
    } catch {}
  }
  return { status: res.statusCode, json, text }
}

/** The body as UTF-8, or AnswerTooLargeError once it passes `maxBytes` (announced or read). */
async function readCapped (body: Dispatcher.ResponseData['body'], url: URL, maxBytes: number, length: string | string[] | undefined): Promise<string> {
  if (typeof length === 'string' && Number(length) > maxBytes) {
    body.destroy()
    throw new AnswerTooLargeError(url, maxBytes)
  }
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size > maxBytes) {
      body.destroy()
      throw new AnswerTooLargeError(url, maxBytes)
    }
    chunks.push(chunk)
  }
  return Buffer.concat(chunks).toString('utf8')
}

export type NetworkFailure = 'refused' | 'dns' | 'timeout' | 'closed' | 'aborted' | 'other'

/** Classifies a failed request (core's networkErrorKind): what happened, in words, and how. */
export function networkFailure (err: unknown, url: URL): { kind: NetworkFailure, reason: string } {
  const where = url.host
  if (err instanceof AnswerTooLargeError) return { kind: 'other', reason: err.message }
  switch (networkErrorKind(err)) {
    case 'refused':
      return { kind: 'refused', reason: `nothing is listening at ${where} (connection refused)` }
    case 'dns':
      return { kind: 'dns', reason: `cannot resolve '${url.hostname}'` }
    case 'unreachable':
      return { kind: 'timeout', reason: `${where} did not accept the connection (${networkErrorCode(err)})` }
    case 'timeout':
      return { kind: 'timeout', reason: `${where} did not answer in time` }
    case 'reset':
      return { kind: 'closed', reason: `${where} closed the connection before answering` }
    case 'aborted':
      return { kind: 'aborted', reason: 'interrupted' }
  }
  return { kind: 'other', reason: `${where}: ${(err as Error | undefined)?.message ?? String(err)}` }
}
