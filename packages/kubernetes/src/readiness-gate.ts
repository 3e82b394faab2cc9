// The readiness gate as a lifecycle observer: the pod's condition (lameduck.dev/registered) turns
// True once the registry confirmed the registration (and, if asked, once part of the warmup has
// passed), so a Deployment with `readinessGates` paces its rollout on consumers being able to see
// the new pod; False once the instance is offline. /health/ready is not slowed by any of it.
import { backoff, backoffDelay, number, sleep, systemClock, type BackoffOptions, type Instance, type LifecycleObserver, type Logger, type ObserverContext, type StateChange } from '@lameduck/core'
import { KubernetesConfigError } from './errors.ts'
import { PodConditionWriter, type ConditionDetail, type PodConditionOptions } from './pod-condition.ts'

export interface ReadinessGateOptions extends PodConditionOptions {
  /**
   * Set the condition once this fraction (0-1) of the app's warmupMs has passed since it
   * registered, so the rollout takes the next old pod down only when the new one carries
   * that share of traffic. Default 0: at the registration.
   */
  warmupFraction?: number
  /** Between failed writes. Default { initialMs: 500, maxMs: 30000 }. */
  backoff?: BackoffOptions
}

interface Want { status: boolean, detail: ConditionDetail }

export class ReadinessGate implements LifecycleObserver {
  readonly name = 'readiness gate'
  readonly writer: PodConditionWriter | null
  readonly warmupFraction: number
  readonly #backoff: Required<BackoffOptions>
  readonly #configError: string | null = null
  #want: Want | null = null
  #written: boolean | undefined
  #loop: Promise<void> | null = null
  #pending: AbortController | null = null
  #abort = new AbortController()
  #log: Logger | null = null
  #warned = new Set<string>()

  constructor (options: ReadinessGateOptions = {}) {
    const { warmupFraction, backoff: retry, ...rest } = options ?? {}
    this.warmupFraction = number('warmupFraction', warmupFraction, 0, { min: 0, max: 1, hint: ' (0.5: half the warmup)' })
    this.#backoff = backoff('backoff', retry, { initialMs: 500, maxMs: 30_000 })
    let writer: PodConditionWriter | null = null
    try {
      writer = new PodConditionWriter(rest)
    } catch (err) {
      // Not in a pod and no kubeconfig: nothing to gate. Bad options still throw.
      if (!(err instanceof KubernetesConfigError)) throw err
      this.#configError = err.message
    }
    this.writer = writer
  }

  /** The condition as last written: true, false, or undefined before the first write. */
  get status (): boolean | undefined { return this.#written }

  attach ({ lifecycle, logger }: ObserverContext): () => Promise<void> {
    this.#log = logger
    if (this.#configError !== null) logger.warn({ lameduck: { observer: this.name } }, `lameduck: readiness gate off: ${this.#configError}`)
    const registered = (instance: Instance): void => {
      const warmupMs = lifecycle.options.warmupMs
      const delay = Math.max(0, (lifecycle.registeredAt ?? lifecycle.clock.now()) + this.warmupFraction * warmupMs - lifecycle.clock.now())
      const message = `registered as ${instance.id}${this.warmupFraction > 0 && warmupMs > 0 ? `, ${Math.round(this.warmupFraction * 100)}% of the ${warmupMs} ms warmup passed` : ''}`
      this.#pending?.abort()
      const pending = this.#pending = new AbortController()
      sleep(lifecycle.clock, delay, AbortSignal.any([pending.signal, this.#abort.signal])).then(() => {
        if (lifecycle.state === 'serving') this.#set({ status: true, detail: { message } })
      }, () => {})
    }
    const state = (change: StateChange): void => {
      if (change.to === 'draining') this.#pending?.abort()
      if (change.to === 'offline' || change.to === 'closing') {
        this.#pending?.abort()
        if (this.#want?.status === true || this.#written === true) this.#set({ status: false, detail: { reason: 'Offline', message: `${change.to}: ${change.reason}` } })
      }
    }
    lifecycle.on('registered', registered)
    lifecycle.on('state', state)
    return async () => {
      lifecycle.off('registered', registered)
      lifecycle.off('state', state)
      // The False of an offline instance is usually written by now; the close does not wait on a down API.
      this.#abort.abort()
      await this.#loop
      this.writer?.close()
    }
  }

  #set (want: Want): void {
    if (this.writer === null) return
    this.#want = want
    this.#loop ??= this.#write(this.writer).finally(() => { this.#loop = null })
  }

  /** Writes what is wanted until it is written, retrying with backoff; a newer wish replaces an older one. */
  async #write (writer: PodConditionWriter): Promise<void> {
    let failures = 0
    const signal = this.#abort.signal
    while (!signal.aborted && this.#want !== null && this.#want.status !== this.#written) {
      const want = this.#want
      try {
        await writer.set(want.status, want.detail, signal)
        this.#written = want.status
        failures = 0
      } catch (err) {
        if (signal.aborted) return
        const code = (err as { code?: string }).code ?? 'error'
        if (!this.#warned.has(code)) {
          this.#warned.add(code)
          const hint = code === 'LAMEDUCK_ERR_K8S_FORBIDDEN' ? " (the pod's service account needs a Role with pods/status: patch; `lameduck plan --readiness-gate` prints it)" : ''
          this.#log?.warn({ err, lameduck: { observer: this.name } }, `lameduck: setting the pod condition ${writer.conditionType} failed${hint}; retrying: ${(err as Error).message}`)
        }
        await sleep(systemClock, backoffDelay(++failures, this.#backoff), signal, { resolveOnAbort: true })
      }
    }
  }
}

/**
 * The `observers` entry that sets this pod's readiness-gate condition once the registry confirmed
 * the registration. Needs `patch` on `pods/status` in the pod's namespace.
 */
export function readinessGate (options?: ReadinessGateOptions): ReadinessGate {
  return new ReadinessGate(options)
}
