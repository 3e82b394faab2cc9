import type { Server } from '@grpc/grpc-js'
import { bindings, names, type Binding } from './server-internals.ts'
import { NotBoundError } from './errors.ts'

/** How often the bind state is looked at until the server is bound. */
const POLL_MS = 20

export interface BindWatch {
  /** The port to wait for (as given to bindAsync); undefined: every bindAsync() done, at least one port bound. */
  name: string | undefined
  timeoutMs: number
  ready: (binding: Binding) => void
  failed: (err: NotBoundError) => void
}

/** The binding that makes the server ready, or null while it is not. */
export function readyBinding (server: Server, name: string | undefined): Binding | null {
  const { bound, pending } = bindings(server)
  if (name !== undefined) return bound.find((b) => names(b, name)) ?? null
  return pending === 0 ? bound[0] ?? null : null
}

/**
 * Calls `ready` once the server is bound, or `failed` once `timeoutMs` passed
 * without (the server stays unregistered: an error to see, not a silent hang).
 * grpc-js says nothing when a bind completes except to its caller, so its
 * state is looked at every few ms; the timers are unref'd. Returns the canceller.
 */
export function whenBound (server: Server, watch: BindWatch): () => void {
  const started = Date.now()
  let timer: NodeJS.Timeout | null = null
  let stopped = false
  const check = (): void => {
    timer = null
    if (stopped) return
    const binding = readyBinding(server, watch.name)
    if (binding !== null) { watch.ready(binding); return }
    if (Date.now() - started >= watch.timeoutMs) {
      watch.failed(new NotBoundError(watch.timeoutMs, watch.name, bindings(server).bound.map((b) => b.key)))
      return
    }
    timer = setTimeout(check, POLL_MS)
    timer.unref()
  }
  queueMicrotask(check)
  return () => {
    stopped = true
    if (timer !== null) clearTimeout(timer)
    timer = null
  }
}
