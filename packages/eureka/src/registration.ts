// One instance's registration with Eureka: register, heartbeats, re-registration
// after the server lost it, offline by DELETE or OUT_OF_SERVICE, online again.
//
// Division of retries: register() and deregister() make one bounded attempt
// (eureka-js-client's own quick retries and server failover included) and
// reject on failure, leaving nothing behind; the caller (the core lifecycle)
// retries them with its backoff. Once registered, keeping the registration alive
// is this class's job alone: heartbeats, and re-registering with backoff after a
// 404 or an outage, which the client itself gives up on.
import { backoffDelay, RegistryError, type BackoffOptions, type Clock, type Instance, type InstanceStatus, type Logger, type Timer } from '@lameduck/core'
import { callback, describeFailure, eurekaRequest, type EurekaJsClient, type EurekaInstanceJson } from './client.ts'
import { toEurekaInstance, type RegistrationShape } from './instance-mapping.ts'
import type { OfflineMode } from './options.ts'

export type RegistrationPhase = 'new' | 'up' | 'out-of-service' | 'gone' | 'closed'

export interface RegistrationSettings extends RegistrationShape {
  offlineMode: OfflineMode
  registerTimeoutMs: number
  backoff: BackoffOptions
  logger: Logger
  /** Drives the heartbeat timers (and stamps lastHeartbeatAt); register/deregister bounds stay on the wall clock. */
  clock: Clock
  createClient: (instance: EurekaInstanceJson) => EurekaJsClient
}

export class Registration {
  readonly id: string
  readonly #s: RegistrationSettings
  #client: EurekaJsClient | undefined
  #app = ''
  #phase: RegistrationPhase = 'new'
  /** An OUT_OF_SERVICE (or other) status override we put on the server and have not removed. */
  #override: InstanceStatus | null = null
  /** Bumped by every register/deregister/close: stale heartbeats and late results check it. */
  #generation = 0
  readonly #abandoned = new Set<number>()
  #lock: Promise<unknown> = Promise.resolve()
  #timer: Timer | undefined
  #failures = 0
  readonly stats = { heartbeats: 0, heartbeatFailures: 0, reRegistrations: 0, lastHeartbeatAt: null as number | null, lastError: null as string | null }

  constructor (id: string, settings: RegistrationSettings) {
    this.id = id
    this.#s = settings
  }

  get phase (): RegistrationPhase { return this.#phase }

  /** `signal` aborted (the lifecycle's timeout) rejects at once, like registerTimeoutMs: the call still runs in order under the lock. */
  register (instance: Instance, signal?: AbortSignal): Promise<void> {
    const gen = this.#begin()
    return this.#bounded('register', gen, this.#exclusive(() => this.#register(instance, gen)), signal)
  }

  deregister (instance: Instance, signal?: AbortSignal): Promise<void> {
    const gen = this.#begin()
    return this.#bounded('deregister', gen, this.#exclusive(() => this.#deregister(instance, gen)), signal)
  }

  /** Status override through the REST API (the client has no call for it). UP removes our override. */
  setStatus (instance: Instance, status: InstanceStatus): Promise<void> {
    return this.#bounded('status', null, this.#exclusive(async () => {
      this.#ensureClient(instance)
      if (status === 'UP') await this.#clearOverride(instance)
      else if (!await this.#putOverride(status)) throw new Error(`Eureka does not know ${this.#app}/${this.id} (404): register it first`)
    }))
  }

  /** PUT .../metadata?k=v; also kept for later re-registrations. */
  updateMetadata (instance: Instance, metadata: Record<string, string>): Promise<void> {
    return this.#bounded('metadata', null, this.#exclusive(async () => {
      const client = this.#ensureClient(instance)
      client.config.instance.metadata = { ...client.config.instance.metadata, ...metadata }
      if (this.#phase !== 'up' && this.#phase !== 'out-of-service') return
      const res = await eurekaRequest(client, { method: 'PUT', uri: `${this.#app}/${this.id}/metadata`, qs: metadata })
      if (res.statusCode !== 200) throw new Error(`PUT metadata answered ${res.statusCode}`)
    }))
  }

  /** Stops heartbeats and cancels the registration if one is held (best effort, bounded). */
  async close (): Promise<void> {
    this.#begin()
    const op = this.#exclusive(async () => {
      if (this.#phase === 'up' || this.#phase === 'out-of-service') await this.#delete()
      this.#phase = 'closed'
    })
    try {
      await this.#bounded('close', null, op)
    } catch (err) {
      this.#s.logger.warn({ err, instance: this.id }, `eureka: could not cancel ${this.#app}/${this.id} on close: ${describeFailure(err)}; its lease will expire`)
    } finally {
      this.#phase = 'closed'
      this.#stopHeartbeats()
    }
  }

  describe (): Record<string, unknown> {
    return { id: this.id, app: this.#app, phase: this.#phase, override: this.#override, ...this.stats }
  }

  // --- operations (run one at a time under #lock) ---

  async #register (instance: Instance, gen: number): Promise<void> {
    if (this.#phase === 'closed') throw new RegistryError('register', 'the registry is closed')
    const client = this.#ensureClient(instance)
    client.config.instance = toEurekaInstance(instance, this.#s)
    await callback((cb) => client.register(cb))
    if (this.#abandoned.has(gen) && gen === this.#generation) {
      // The caller gave up (timeout) and asked nothing since: undo, so a rejected register() leaves nothing behind.
      this.#s.logger.warn({ instance: this.id }, `eureka: registration of ${this.#app}/${this.id} completed after the caller gave up; cancelling it`)
      await this.#delete().catch(() => {})
      return
    }
    this.#phase = 'up'
    // Going online again after OUT_OF_SERVICE: the override survived the POST (OverrideExistsRule); remove it.
    if (this.#override !== null) await this.#clearOverride(instance)
    if (instance.status !== 'UP') await this.#putOverride(instance.status)
    this.#failures = 0
    this.#s.logger.info({ instance: this.id, app: this.#app }, `eureka: registered ${this.#app}/${this.id}`)
    this.#scheduleHeartbeat(gen, this.#s.heartbeatIntervalMs)
  }

  async #deregister (instance: Instance, gen: number): Promise<void> {
    if (this.#phase === 'closed') throw new RegistryError('deregister', 'the registry is closed')
    this.#ensureClient(instance)
    if (this.#s.offlineMode === 'delete') {
      await this.#delete()
      this.#s.logger.info({ instance: this.id }, `eureka: cancelled ${this.#app}/${this.id} (DELETE)`)
      return
    }
    const found = await this.#putOverride('OUT_OF_SERVICE')
    if (!found) { this.#phase = 'gone'; return }
    this.#phase = 'out-of-service'
    this.#s.logger.info({ instance: this.id }, `eureka: ${this.#app}/${this.id} is OUT_OF_SERVICE`)
    // Keep the lease alive so the instance stays visible as OUT_OF_SERVICE; heartbeats in this
    // phase never re-register (a 404 just ends them), so nothing brings it back UP behind the drain.
    this.#scheduleHeartbeat(gen, this.#s.heartbeatIntervalMs)
  }

  async #delete (): Promise<void> {
    const res = await eurekaRequest(this.#client!, { method: 'DELETE', uri: `${this.#app}/${this.id}` })
    if (res.statusCode !== 200 && res.statusCode !== 404) throw new Error(`DELETE answered ${res.statusCode}${res.body ? `: ${res.body.slice(0, 200)}` : ''}`)
    this.#phase = 'gone'
    this.#override = null
  }

  /** PUT .../status?value=X. Returns false when the server does not know the instance. */
  async #putOverride (status: InstanceStatus): Promise<boolean> {
    const res = await eurekaRequest(this.#client!, { method: 'PUT', uri: `${this.#app}/${this.id}/status`, qs: { value: status } })
    if (res.statusCode === 404) return false
    if (res.statusCode !== 200) throw new Error(`PUT status=${status} answered ${res.statusCode}`)
    this.#override = status
    return true
  }

  /** DELETE .../status?value=UP; re-registers when the lease is gone. */
  async #clearOverride (instance: Instance): Promise<void> {
    const res = await eurekaRequest(this.#client!, { method: 'DELETE', uri: `${this.#app}/${this.id}/status`, qs: { value: 'UP' } })
    if (res.statusCode === 404) {
      this.#override = null
      this.#client!.config.instance = toEurekaInstance({ ...instance, status: 'UP' }, this.#s)
      await callback((cb) => this.#client!.register(cb))
      this.#phase = 'up'
      return
    }
    if (res.statusCode !== 200) throw new Error(`DELETE status override answered ${res.statusCode}`)
    this.#override = null
  }

  // --- heartbeats ---

  #scheduleHeartbeat (gen: number, delayMs: number): void {
    this.#stopHeartbeats()
    if (gen !== this.#generation) return
    this.#timer = this.#s.clock.setTimeout(() => {
      this.#timer = undefined
      this.#exclusive(() => this.#heartbeat(gen)).catch(() => {})
    }, delayMs)
    this.#timer.unref?.()
  }

  #stopHeartbeats (): void {
    if (this.#timer !== undefined) this.#s.clock.clearTimeout(this.#timer)
    this.#timer = undefined
  }

  async #heartbeat (gen: number): Promise<void> {
    if (gen !== this.#generation || (this.#phase !== 'up' && this.#phase !== 'out-of-service')) return
    const log = this.#s.logger
    try {
      // The same request as the client's renew(): PUT with no body and no parameters.
      const res = await eurekaRequest(this.#client!, { method: 'PUT', uri: `${this.#app}/${this.id}` })
      if (gen !== this.#generation) return // deregister()/close() came while it was in flight: ignore the answer
      if (res.statusCode === 200) {
        if (this.#failures > 0) log.info({ instance: this.id }, `eureka: heartbeats for ${this.#app}/${this.id} succeed again`)
        this.#failures = 0
        this.stats.heartbeats++
        this.stats.lastHeartbeatAt = this.#s.clock.now()
        this.#scheduleHeartbeat(gen, this.#s.heartbeatIntervalMs)
        return
      }
      if (res.statusCode !== 404) throw new Error(`heartbeat answered ${res.statusCode}`)
      if (this.#phase === 'out-of-service') {
        log.info({ instance: this.id }, `eureka: the server no longer knows ${this.#app}/${this.id} (offline); not re-registering it`)
        this.#phase = 'gone'
        this.#override = null
        return
      }
      // The server lost the registration (restart, eviction, operator DELETE): register again.
      log.warn({ instance: this.id }, `eureka: heartbeat for ${this.#app}/${this.id} got 404; re-registering`)
      await callback((cb) => this.#client!.register(cb))
      if (gen !== this.#generation) return
      this.stats.reRegistrations++
      log.info({ instance: this.id }, `eureka: re-registered ${this.#app}/${this.id}`)
      // A restarted server lost our override too: put it back.
      if (this.#override !== null) await this.#putOverride(this.#override)
      this.#failures = 0
      this.#scheduleHeartbeat(gen, this.#s.heartbeatIntervalMs)
    } catch (err) {
      if (gen !== this.#generation) return
      this.#failures++
      this.stats.heartbeatFailures++
      this.stats.lastError = describeFailure(err)
      const delay = Math.min(backoffDelay(this.#failures, this.#s.backoff), this.#s.heartbeatIntervalMs)
      const msg = `eureka: heartbeat for ${this.#app}/${this.id} failed (${this.stats.lastError}); retrying in ${delay} ms`
      if (this.#failures === 1 || this.#failures % 10 === 0) log.warn({ instance: this.id, failures: this.#failures }, msg)
      else log.debug({ instance: this.id, failures: this.#failures }, msg)
      this.#scheduleHeartbeat(gen, delay)
    }
  }

  // --- plumbing ---

  #begin (): number {
    this.#stopHeartbeats()
    return ++this.#generation
  }

  #ensureClient (instance: Instance): EurekaJsClient {
    this.#app = instance.service.toUpperCase()
    this.#client ??= this.#s.createClient(toEurekaInstance(instance, this.#s))
    return this.#client
  }

  #exclusive<T> (fn: () => Promise<T>): Promise<T> {
    const run = this.#lock.then(fn, fn)
    this.#lock = run.catch(() => {})
    return run
  }

  /**
   * Rejects with RegistryError on failure, after registerTimeoutMs, or when
   * `signal` aborts. The operation then finishes in the background, still under
   * the lock, so the next register/deregister cannot overtake it; a register the
   * caller gave up on is undone when it lands (see #register).
   */
  #bounded (operation: string, gen: number | null, op: Promise<void>, signal?: AbortSignal): Promise<void> {
    const ms = this.#s.registerTimeoutMs
    return new Promise((resolve, reject) => {
      const giveUp = (err: RegistryError): void => {
        if (gen !== null) this.#abandoned.add(gen)
        reject(err)
      }
      const onAbort = (): void => {
        clearTimeout(timer)
        giveUp(new RegistryError(operation, 'the caller gave up (its signal was aborted); the call finishes in the background, before any later one', { cause: signal?.reason }))
      }
      const done = (): void => {
        clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
        if (gen !== null) this.#abandoned.delete(gen)
      }
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort)
        giveUp(new RegistryError(operation, `Eureka did not answer within ${ms} ms (registerTimeoutMs)`))
      }, ms)
      timer.unref()
      if (signal?.aborted) onAbort()
      else signal?.addEventListener('abort', onAbort, { once: true })
      op.then(() => { done(); resolve() }, (err: unknown) => {
        done()
        this.stats.lastError = describeFailure(err)
        reject(err instanceof RegistryError ? err : new RegistryError(operation, describeFailure(err), { cause: err }))
      })
    })
  }
}
