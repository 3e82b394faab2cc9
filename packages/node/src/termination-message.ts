import { fs } from './builtins.ts'
import { redactText, type Lifecycle, type LifecycleEvents, type Logger, type OfflineReport } from '@lameduck/core'

/** Kubernetes' default terminationMessagePath: what `kubectl describe pod` shows as the last state's message. */
export const DEFAULT_TERMINATION_PATH = '/dev/termination-log'
/** The kubelet keeps at most 4096 bytes of a container's termination message. */
const MAX_BYTES = 4_096

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`

/** What each term of the window rested on: the registry's confirmation, observed evidence (EndpointSlices, ...) or the preset. */
function evidence (report: OfflineReport): string {
  if (report.windowTerms.length === 0) return ''
  return ` (${report.windowTerms.map((t) => `${t.term} ${t.by}: ${t.detail}`).join('; ')})`
}

/** One short paragraph: how the last drain ended and why. */
export function describeOffline (report: OfflineReport): string {
  const d = report.deregistration
  const dereg = d.state === 'confirmed'
    ? `deregistration confirmed (${d.attempts} attempt${d.attempts === 1 ? '' : 's'})`
    : d.state === 'none' ? 'nothing to deregister' : `deregistration ${d.state}${d.lastError === null ? '' : ` (last error: ${d.lastError})`}`
  const window = report.endedEarly ? `window ${seconds(report.windowMs)}, ended early: every consumer was told` : `window ${seconds(report.windowMs)}${report.windowEndedAt === null ? ' (not reached)' : ''}${evidence(report)}`
  const cut = report.inflightAtEnd > 0 ? `${report.inflightAtEnd} request(s) still in flight at the bound` : 'nothing cut'
  const problems = report.problems.length === 0 ? '' : `; problems: ${report.problems.slice(-3).map((p) => `${p.step}: ${p.message}`).join('; ')}`
  return `lameduck: ${report.outcome} (${report.reason}) in ${seconds(report.totalMs)}: ${dereg}; ${window}; sidecar ${seconds(report.sidecarMs)}; in-flight wait ${seconds(report.inflightWaitMs)}; ${report.requestsWhileDraining} request(s) served while draining; ${cut}${problems}`
}

/**
 * Writes the pod's termination message: a short account of the last offline
 * sequence (and of a forced exit) to Kubernetes' termination log, so `kubectl
 * describe pod` says why the last drain ended. The default path is written only
 * where it exists (in a container); a path given is created. A path that cannot
 * be written gets one warning, never an error.
 */
export class TerminationMessage {
  readonly #path: string
  readonly #onlyIfPresent: boolean
  readonly #log: Logger
  #warned = false
  readonly #onOffline: (...args: LifecycleEvents['offline']) => void
  readonly #lifecycle: Lifecycle

  constructor (lifecycle: Lifecycle, log: Logger, path: string | undefined) {
    this.#path = path ?? DEFAULT_TERMINATION_PATH
    this.#onlyIfPresent = path === undefined
    this.#log = log
    this.#lifecycle = lifecycle
    this.#onOffline = (report) => { this.write(describeOffline(report)) }
    lifecycle.on('offline', this.#onOffline)
  }

  /** A forced exit: what the bound cut, after the last drain's account. */
  cut (why: string): void {
    const last = this.#lifecycle.lastReport
    this.write(`${last === null ? '' : describeOffline(last) + '\n'}lameduck: forced exit: ${why}`)
  }

  write (text: string): void {
    if (this.#onlyIfPresent && !fs().existsSync(this.#path)) return
    let body = redactText(text)
    while (Buffer.byteLength(body) > MAX_BYTES) body = body.slice(0, body.length - 64)
    try {
      fs().writeFileSync(this.#path, body)
    } catch (err) {
      if (this.#warned) return
      this.#warned = true
      this.#log.warn({ lameduck: { terminationMessage: this.#path } }, `lameduck: cannot write the termination message to ${this.#path} (${(err as Error).message}); set terminationMessage: { path } to a writable file, or false`)
    }
  }

  detach (): void { this.#lifecycle.off('offline', this.#onOffline) }
}
