import type { Lifecycle, Logger } from '@lameduck/core'
import type { ConnectionStats } from './connections.ts'
import { coordinator, type Participant } from './signal-coordinator.ts'

export interface SignalContext {
  lifecycle: Lifecycle
  logger: Logger
  signals: NodeJS.Signals[]
  shutdownTimeoutMs: number
  /** The transport's connections: counted in what a forced exit cut, then destroyed. */
  connections: { stats(): ConnectionStats, destroyAll(): void }
  /** What runs after the offline sequence: let connections go, then close the app. */
  close: () => Promise<void>
  /** Describes the requests in flight, for the log of what a forced exit cut. */
  inflightDescription: () => string
  /** Told what a forced exit cut, before it happens (the termination message). */
  forced?: (why: string) => void
  /** 0 after a clean close, 1 when forced; undefined: the process-wide default (exitProcess). */
  terminate: ((code: 0 | 1) => void) | undefined
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
 * Installs the signal path of one engine. The first signal runs the offline
 * sequence (or lets a running one finish: kubelet sends SIGTERM as soon as the
 * preStop hook returns) and closes the app, bounded by shutdownTimeoutMs; a
 * second signal forces exit. Engines in one process (a public and an internal
 * port, HTTP beside HTTPS, a Fastify app beside a plain server) share one
 * process-wide coordinator: the process ends once every engine that took the
 * signal is done. Returns the uninstaller.
 */
export function installSignals (ctx: SignalContext): () => void {
  return coordinator().join(new SignalPath(ctx))
}

/** One engine's signal path: the signal it got, its bound, and how it ended. */
class SignalPath implements Participant {
  readonly #ctx: SignalContext
  #received: NodeJS.Signals | null = null
  #finish: ((code: 0 | 1) => void) | null = null
  #ended = false

  constructor (ctx: SignalContext) { this.#ctx = ctx }

  get signals (): readonly NodeJS.Signals[] { return this.#ctx.signals }
  get logger (): Logger { return this.#ctx.logger }
  get terminate (): ((code: 0 | 1) => void) | undefined { return this.#ctx.terminate }

  /** Drains and closes for the first signal; resolves with the exit code this engine asks for. */
  run (signal: NodeJS.Signals): Promise<0 | 1> {
    return new Promise((resolve) => {
      this.#finish = resolve
      this.#onSignal(signal).catch(() => { this.#end(1) })
    })
  }

  /** A second signal, to any engine of the process: cut now. */
  force (signal: NodeJS.Signals): void {
    if (this.#ended) return
    this.#forceExit(`second signal ${signal} after ${this.#received ?? signal}`)
  }

  #end (code: 0 | 1): void {
    if (this.#ended) return
    this.#ended = true
    this.#finish?.(code)
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
    const said = `${why}; exiting now and cutting: ${cut.inflight} request(s) in flight, ${cut.openConnections} open connection(s), ${cut.windowRemainingMs} ms of window left (state ${cut.state}${cut.phase ? `, phase ${cut.phase}` : ''})${requests}`
    this.#ctx.logger.error({ lameduck: { cut } }, `lameduck: ${said}`)
    this.#ctx.forced?.(said)
    connections.destroyAll()
    this.#end(1)
  }

  async #onSignal (signal: NodeJS.Signals): Promise<void> {
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
    log.info({ lameduck: { signal, ms, exitCode: code } }, `lameduck: closed ${ms} ms after ${signal} (exit code ${code})`)
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
