import type { Socket } from 'node:net'
import type { FastifyInstance } from 'fastify'
import type { Lifecycle } from '@lameduck/core'

/**
 * After the drain, give keep-alive connections a moment to go by themselves:
 * busy ones close after their next response (`connection: close`), idle ones
 * are swept after two idle sweeps. app.close() would otherwise close every idle
 * socket at once, hot ones included, racing a client's next request on them.
 */
const CONNECTIONS_GONE_MS = 1_500

async function connectionsGone (sockets: Set<Socket>, boundMs: number): Promise<void> {
  const deadline = Date.now() + boundMs
  while (sockets.size > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25))
}

export interface SignalContext {
  app: FastifyInstance
  lifecycle: Lifecycle
  signals: NodeJS.Signals[]
  shutdownTimeoutMs: number
  connections: () => { open: number, closedWhileDraining: number }
  sockets: Set<Socket>
}

/**
 * Installs the signal handlers. The first signal runs the offline sequence (or
 * lets a running one finish: kubelet sends SIGTERM as soon as the preStop hook
 * returns) and closes the app, bounded by shutdownTimeoutMs; a second signal
 * forces exit. Returns the uninstaller.
 *
 * Installing a handler replaces Node's default "exit on SIGTERM", so this
 * module owns the exit: 0 after a clean close, 1 when forced.
 */
export function installSignals (ctx: SignalContext): () => void {
  const { app, lifecycle } = ctx
  const log = app.log
  let received: NodeJS.Signals | null = null

  function forceExit (why: string): void {
    const drain = lifecycle.drain
    const now = lifecycle.clock.now()
    const cut = {
      state: lifecycle.state,
      phase: drain?.phase ?? null,
      windowRemainingMs: drain ? Math.max(0, drain.windowEndsAt - now) : 0,
      inflight: lifecycle.inflight.count,
      openConnections: ctx.sockets.size
    }
    log.error({ lameduck: { cut } }, `lameduck: ${why}; exiting now and cutting: ${cut.inflight} request(s) in flight, ${cut.openConnections} open connection(s), ${cut.windowRemainingMs} ms of window left (state ${cut.state}${cut.phase ? `, phase ${cut.phase}` : ''})`)
    for (const socket of ctx.sockets) socket.destroy()
    process.exit(1)
  }

  async function onSignal (signal: NodeJS.Signals): Promise<void> {
    if (received !== null) {
      forceExit(`second signal ${signal} after ${received}`)
      return
    }
    received = signal
    const started = Date.now()
    log.info({ lameduck: { signal, state: lifecycle.state, shutdownTimeoutMs: ctx.shutdownTimeoutMs } }, `lameduck: ${signal} received in state ${lifecycle.state}: running the offline sequence, then closing (bound ${ctx.shutdownTimeoutMs} ms)`)
    const bound = setTimeout(() => forceExit(`shutdownTimeoutMs (${ctx.shutdownTimeoutMs} ms) reached`), ctx.shutdownTimeoutMs)
    try {
      await lifecycle.shutdown(signal)
      await connectionsGone(ctx.sockets, CONNECTIONS_GONE_MS)
      await app.close()
    } catch (err) {
      log.error({ err }, 'lameduck: error while shutting down')
      process.exitCode = 1
    } finally {
      clearTimeout(bound)
    }
    log.info({ lameduck: { signal, ms: Date.now() - started } }, `lameduck: stopped ${Date.now() - started} ms after ${signal}`)
    // If something else (a DB pool, a timer) keeps the event loop alive, do not hang until SIGKILL.
    setTimeout(() => {
      log.warn('lameduck: the event loop is still busy 1 s after close; exiting anyway')
      process.exit()
    }, 1_000).unref()
  }

  const handlers = new Map<NodeJS.Signals, () => void>()
  for (const signal of ctx.signals) {
    const handler = (): void => { onSignal(signal).catch(() => {}) }
    handlers.set(signal, handler)
    process.on(signal, handler)
  }
  return () => {
    // Keep the handlers while a signal-driven shutdown is running: a second signal must still force exit.
    if (received !== null) return
    for (const [signal, handler] of handlers) process.off(signal, handler)
    handlers.clear()
  }
}
