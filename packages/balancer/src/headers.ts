import type { Dispatcher } from 'undici'

export { CONSUMER_HEADER, STATE_HEADER } from '@lameduck/core'

type Headers = Dispatcher.DispatchOptions['headers']

/**
 * Returns request headers with `name: value` added, in any shape undici accepts
 * (object, flat array, iterable of pairs). The caller's object is never mutated,
 * and a value the caller set already is kept. `alone` (`[name, value]`, built
 * once) is what a request without headers gets.
 */
export function withHeader (headers: Headers, name: string, value: string, alone: readonly string[] = [name, value]): Headers {
  if (headers === null || headers === undefined) return alone as Headers
  if (Array.isArray(headers)) {
    for (let i = 0; i < headers.length; i += 2) if (String(headers[i]).toLowerCase() === name) return headers
    return [...headers, name, value]
  }
  if (typeof (headers as Iterable<unknown>)[Symbol.iterator] === 'function') {
    // A Map, Headers or generator may be single-use: flatten it once.
    const flat: (string | string[])[] = []
    let present = false
    for (const [key, val] of headers as Iterable<[string, string | string[] | undefined]>) {
      if (val === undefined) continue
      if (key.toLowerCase() === name) present = true
      flat.push(key, val)
    }
    if (!present) flat.push(name, value)
    return flat as string[]
  }
  const record = headers as Record<string, unknown>
  for (const key in record) if (key.length === name.length && key.toLowerCase() === name) return headers
  return { ...(headers as Record<string, string>), [name]: value }
}
