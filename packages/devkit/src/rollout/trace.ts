// Where each lab request went, seen from inside the consumer's connection pools:
// the origin it was sent to and when a pool gave it a socket. A request that timed
// out without a socket never left the consumer (queued behind connects, or the
// consumer's own process starved); one with a socket and no answer was held past it.
import { Pool, type Dispatcher } from 'undici'

/** The header that carries a request's lab id from the load generator to the pools. */
export const TRACE_HEADER = 'x-lab-request'

export interface Hop {
  /** The origin of the last attempt (the balancer may have retried elsewhere). */
  origin: string
  /** ms from the trace's `fired` to the pool handing the attempt a socket; absent when it never got one. */
  socketMs?: number
}

type Handler = Dispatcher.DispatchHandler

export class RequestTrace {
  readonly #fired = new Map<string, number>()
  readonly #hops = new Map<string, Hop>()

  /** A pool factory for undici's Agent or the balancer (`factory`) that records each request's hop. */
  readonly factory = (origin: string | URL, opts: object): Dispatcher => {
    const where = typeof origin === 'string' ? origin : origin.origin
    return new Pool(origin, opts).compose((dispatch) => (options, handler) => {
      const id = idOf(options.headers)
      if (id === undefined) return dispatch(options, handler)
      this.#hops.set(id, { origin: where })
      return dispatch(options, this.#wrap(id, handler))
    })
  }

  fired (id: string, at: number): void { this.#fired.set(id, at) }

  /** The request's hop, forgotten once read. */
  take (id: string): Hop | undefined {
    const hop = this.#hops.get(id)
    this.#hops.delete(id)
    this.#fired.delete(id)
    return hop
  }

  #wrap (id: string, handler: Handler): Handler {
    const started = (): void => {
      const hop = this.#hops.get(id)
      const fired = this.#fired.get(id)
      if (hop !== undefined && fired !== undefined) hop.socketMs = Date.now() - fired
    }
    return {
      onRequestStart: (controller, context) => { started(); handler.onRequestStart?.(controller, context) },
      onRequestUpgrade: (controller, status, headers, socket) => handler.onRequestUpgrade?.(controller, status, headers, socket),
      onResponseStart: (controller, status, headers, message) => handler.onResponseStart?.(controller, status, headers, message),
      onResponseData: (controller, chunk) => handler.onResponseData?.(controller, chunk),
      onResponseEnd: (controller, trailers) => handler.onResponseEnd?.(controller, trailers),
      onResponseError: (controller, err) => handler.onResponseError?.(controller, err)
    }
  }
}

function idOf (headers: Dispatcher.DispatchOptions['headers']): string | undefined {
  if (headers === null || headers === undefined) return undefined
  if (Array.isArray(headers)) {
    for (let i = 0; i < headers.length; i += 2) if (String(headers[i]).toLowerCase() === TRACE_HEADER) return String(headers[i + 1])
    return undefined
  }
  if (typeof (headers as Iterable<unknown>)[Symbol.iterator] === 'function') {
    for (const [k, v] of headers as Iterable<[string, string]>) if (k.toLowerCase() === TRACE_HEADER) return String(v)
    return undefined
  }
  const v = (headers as Record<string, unknown>)[TRACE_HEADER]
  return v === undefined ? undefined : String(v)
}
