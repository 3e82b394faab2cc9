import type { Logger } from '@lameduck/core'

/** What the coordinator needs of one engine's signal path. */
export interface Participant {
  readonly signals: readonly NodeJS.Signals[]
  readonly logger: Logger
  /** The engine's own end of the process; undefined: the default (exitProcess). */
  readonly terminate: ((code: 0 | 1) => void) | undefined
  /** Drains and closes for the first signal; resolves with the exit code it asks for. */
  run: (signal: NodeJS.Signals) => Promise<0 | 1>
  /** Cuts now (a second signal). */
  force: (signal: NodeJS.Signals) => void
}

/**
 * The default end of the process. Installing a signal handler replaces Node's
 * own "exit on SIGTERM", so the signal path owns the exit: forced -> exit 1 now;
 * clean -> let the event loop end by itself, and exit anyway 1 s later if
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

/**
 * The one owner of the process's signal handlers, shared by every engine in it
 * (through a global symbol, so two copies of this package share it too). Each
 * engine alone would end the process when its own drain is done, cutting the
 * requests another engine is still waiting for. Here the first signal starts
 * every engine's drain at once, a second one cuts them all, and the process
 * ends once every engine that took the signal is done, with the worst code.
 */
class SignalCoordinator {
  readonly #participants = new Set<Participant>()
  readonly #handlers = new Map<NodeJS.Signals, () => void>()
  #running: Set<Participant> | null = null
  #first: NodeJS.Signals | null = null

  /** Adds an engine's path; returns its removal (kept while its shutdown runs: a second signal must still cut it). */
  join (participant: Participant): () => void {
    this.#participants.add(participant)
    for (const signal of participant.signals) {
      if (this.#handlers.has(signal)) continue
      const handler = (): void => { this.#onSignal(signal).catch(() => {}) }
      this.#handlers.set(signal, handler)
      process.on(signal, handler)
    }
    return () => {
      if (this.#running?.has(participant) === true) return
      this.#participants.delete(participant)
      this.#dropUnusedHandlers()
    }
  }

  #dropUnusedHandlers (): void {
    for (const [signal, handler] of this.#handlers) {
      if ([...this.#participants].some((p) => p.signals.includes(signal))) continue
      process.off(signal, handler)
      this.#handlers.delete(signal)
    }
  }

  async #onSignal (signal: NodeJS.Signals): Promise<void> {
    if (this.#running !== null) {
      for (const p of this.#running) p.force(signal)
      return
    }
    this.#first = signal
    const running = new Set([...this.#participants].filter((p) => p.signals.includes(signal)))
    this.#running = running
    const codes = await Promise.all([...running].map(async (p) => {
      const code = await p.run(signal)
      running.delete(p)
      if (running.size > 0) p.logger.info({ lameduck: { signal, waitingFor: running.size } }, `lameduck: this server is done; the process ends once the ${running.size} other attached server(s) are done too`)
      return code
    }))
    const code: 0 | 1 = codes.includes(1) ? 1 : 0
    const done = [...this.#participants]
    for (const p of done) this.#participants.delete(p)
    this.#running = null
    this.#dropUnusedHandlers()
    this.#terminate(done.filter((p) => p.signals.includes(signal)), code)
  }

  /** Each engine's own terminate once, and the default exit once if any engine left it to the default. */
  #terminate (participants: Participant[], code: 0 | 1): void {
    const first = participants[0]
    if (first === undefined) return
    const servers = participants.length === 1 ? '' : ` (all ${participants.length} attached servers are done)`
    first.logger.info({ lameduck: { signal: this.#first, exitCode: code, servers: participants.length } }, `lameduck: ending the process with exit code ${code} once its event loop is empty (at most 1 s later)${servers}`)
    const custom = new Set(participants.map((p) => p.terminate).filter((t) => t !== undefined))
    for (const terminate of custom) terminate(code)
    if (participants.some((p) => p.terminate === undefined)) exitProcess(first.logger)(code)
  }
}

const kCoordinator = Symbol.for('lameduck.signalCoordinator')

/** The process's coordinator, created on first use. */
export function coordinator (): SignalCoordinator {
  const holder = process as unknown as { [kCoordinator]?: SignalCoordinator }
  holder[kCoordinator] ??= new SignalCoordinator()
  return holder[kCoordinator]
}
