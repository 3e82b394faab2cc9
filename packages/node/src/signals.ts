import type { Lifecycle, Logger } from '@lameduck/core'
import type { Connections } from './connections.ts'

export interface SignalContext {
  lifecycle: Lifecycle
  logger: Logger
  signals: NodeJS.Signals[]
  shutdownTimeoutMs: number
  connections: Connections
  /** What runs after the offline sequence: let connections go, then close the app. */
  close: () => Promise<void>
  /** Describes the requests in flight, for the log of what a forced exit cut. */
  inflightDescription: () => string
  /** 0 after a clean close, 1 when forced. */
  terminate: (code: 0 | 1) => void
}

/**
 * The default end of the process. Installing a signal handler replaces Node's
 * own "exit on SIGTERM", so the signal path owns the exit: forced → exit 1 now;
 * clean → let the event loop end by itself, and exit anyway 1 s later if
 * something (a DB pool, a timer) keeps it busy, rather than hang until SIGKILL.
 */
export function exitProcess (logger: Logger): (code: 0 | 1) => void {
  return (code) => {
    if (code === 1) process.exit(1)
    const closedAt = Date.now()
    // Said when it happens: the process ends when the event loop is empty, not when the app closed.
    // 'beforeExit' (not 'exit'): an asynchronous logger still gets its line out.
    process.once('beforeExit', () => {
      const exitCode = process.exitCode ?? 0
      logger.info({ lameduck: { exitCode, afterCloseMs: Date.now() - closedAt } }, `lameduck: process exiting with code ${exitCode}, ${Date.now() - closedAt} ms after the app closed`)
    })
    setTimeout(() => {
      logger.warn({ lameduck: { afterCloseMs: Date.now() - closedAt } }, 'lameduck: the event loop is still busy 1 s after close (a timer, a DB pool, an open handle); exiting anyway')
      process.exit()
    }, 1_000).unref()
  }
}

/** What the first signal does, said for the state it finds. */
function intent (lifecycle: Lifecycle): string {
  switch (lifecycle.state) {
    case 'registering':
    case 'serving': return 'running the offline sequence (deregister, window, in-flight wait), then closing'
    case 'draining': return 'letting the running offline sequence finish, then closing'
    case 'offline': return `already offline since ${new Date(lifecycle.status().since as number).toISOString()}; closing (nothing to drain)`
    case 'starting':
    case 'waiting': return 'not registered, nothing to drain; closing'
    default: return 'already closing'
  }
}

/**
 * Installs the signal handlers. The first signal runs the offline sequence (or
 * lets a running one finish: kubelet sends SIGTERM as soon as the preStop hook
 * returns) and closes the app, bounded by shutdownTimeoutMs; a second signal
 * forces exit. Returns the uninstaller.
 */
export function installSignals (ctx: SignalContext): () => void {
  const path = new SignalPath(ctx)
  for (const signal of ctx.signals) path.listen(signal)
  return () => { path.uninstall() }
}

/** One process's signal path: its handlers, the signal it got, and whether it ended. */
class SignalPath {
  readonly #ctx: SignalContext
  readonly #handlers = new Map<NodeJS.Signals, () => void>()
  #received: NodeJS.Signals | null = null
  #ended = false

  constructor (ctx: SignalContext) { this.#ctx = ctx }

  listen (signal: NodeJS.Signals): void {
    const handler = (): void => { this.#onSignal(signal).catch(() => {}) }
    this.#handlers.set(signal, handler)
    process.on(signal, handler)
  }

  uninstall (): void {
    // Keep the handlers while a signal-driven shutdown is running: a second signal must still force exit.
    if (this.#received === null) this.#removeHandlers()
  }

  #removeHandlers (): void {
    for (const [signal, handler] of this.#handlers) process.off(signal, handler)
    this.#handlers.clear()
  }

  #end (code: 0 | 1): void {
    if (this.#ended) return
    this.#ended = true
    this.#removeHandlers()
    this.#ctx.terminate(code)
  }

  #forceExit (why: string): void {
    const { lifecycle, connections } = this.#ctx
    const drain = lifecycle.drain
    const stats = connections.stats()
    const cut = {
      state: lifecycle.state,
      phase: drain?.phase ?? null,
      windowRemainingMs: drain ? Math.max(0, drain.windowEndsAt - lifecycle.clock.now()) : 0,
      inflight: lifecycle.inflight.count,
      openConnections: stats.open + stats.upgraded
    }
    const requests = cut.inflight > 0 ? `; cut: ${this.#ctx.inflightDescription()}` : ''
    this.#ctx.logger.error({ lameduck: { cut } }, `lameduck: ${why}; exiting now and cutting: ${cut.inflight} request(s) in flight, ${cut.openConnections} open connection(s), ${cut.windowRemainingMs} ms of window left (state ${cut.state}${cut.phase ? `, phase ${cut.phase}` : ''})${requests}`)
    connections.destroyAll()
    this.#end(1)
  }

  async #onSignal (signal: NodeJS.Signals): Promise<void> {
    if (this.#received !== null) {
      this.#forceExit(`second signal ${signal} after ${this.#received}`)
      return
    }
    this.#received = signal
    const { lifecycle, logger: log, shutdownTimeoutMs } = this.#ctx
    const clock = lifecycle.clock
    const started = clock.now()
    log.info({ lameduck: { signal, state: lifecycle.state, shutdownTimeoutMs } }, `lameduck: ${signal} received in state ${lifecycle.state}: ${intent(lifecycle)} (bound ${shutdownTimeoutMs} ms)`)
    const bound = clock.setTimeout(() => { this.#forceExit(`shutdownTimeoutMs (${shutdownTimeoutMs} ms) reached`) }, shutdownTimeoutMs)
    let code: 0 | 1 = 0
    try {
      await this.#drainAndClose(signal, started)
    } catch (err) {
      log.error({ err }, 'lameduck: error while shutting down')
      code = 1
    } finally {
      clock.clearTimeout(bound)
    }
    if (this.#ended) return
    const ms = clock.now() - started
    log.info({ lameduck: { signal, ms, exitCode: code } }, `lameduck: closed ${ms} ms after ${signal}; ending the process with exit code ${code} once its event loop is empty (at most 1 s later)`)
    this.#end(code)
  }

  async #drainAndClose (signal: NodeJS.Signals, started: number): Promise<void> {
    const { lifecycle, logger: log } = this.#ctx
    const wasLeaving = lifecycle.state
    await lifecycle.shutdown(signal)
    if (wasLeaving !== 'offline' && lifecycle.lastReport !== null) {
      const ms = lifecycle.clock.now() - started
      log.info({ lameduck: { signal, ms } }, `lameduck: offline sequence done ${ms} ms after ${signal}; closing the app (open connections get up to 1.5 s to go by themselves)`)
    }
    await this.#ctx.close()
  }
}
