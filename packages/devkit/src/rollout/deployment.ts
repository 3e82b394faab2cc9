// A Deployment's rolling update, as the Deployment controller runs it: new pods
// up to replicas + maxSurge, old pods deleted only while at least
// replicas − maxUnavailable pods are ready; readiness gates every step.
import { EventEmitter } from 'node:events'
import type { Pod, TerminationResult } from './pod.ts'

export interface RollingUpdate { replicas: number, maxSurge: number, maxUnavailable: number }

export interface DeploymentOptions {
  strategy: RollingUpdate
  makePod: (version: string, index: number) => Promise<Pod>
  terminate: (pod: Pod) => Promise<TerminationResult>
  /** Called whenever the set of ready, non-terminating pods changes (the endpoints controller). */
  onEndpoints?: (pods: Pod[]) => void
  /** Give up when a step makes no progress for this long. */
  progressDeadlineMs: number
}

export class Deployment extends EventEmitter {
  readonly pods: Pod[] = []
  readonly terminations: TerminationResult[] = []
  readonly #o: DeploymentOptions
  #created = 0
  /** Pods whose makePod has not resolved yet (a sidecar still starting): they count against the surge. */
  #making = new Map<string, number>()
  #pending = new Set<Promise<unknown>>()

  constructor (options: DeploymentOptions) {
    super()
    this.#o = options
  }

  /** Active pods: not being deleted. */
  get active (): Pod[] { return this.pods.filter((p) => p.terminatingAt === null) }

  #publish (): void {
    this.#o.onEndpoints?.(this.active.filter((p) => p.ready))
  }

  async #create (version: string): Promise<Pod> {
    this.#making.set(version, (this.#making.get(version) ?? 0) + 1)
    let pod: Pod
    try {
      pod = await this.#o.makePod(version, this.#created++)
    } finally {
      this.#making.set(version, this.#making.get(version)! - 1)
    }
    this.pods.push(pod)
    pod.on('ready', () => { this.#publish(); this.emit('change') })
    pod.on('terminating', () => { this.#publish(); this.emit('change') })
    await pod.start()
    this.emit('change')
    return pod
  }

  /** Creates `replicas` pods of `version` and waits until all are ready. */
  async scaleUp (version: string): Promise<void> {
    await Promise.all(Array.from({ length: this.#o.strategy.replicas }, () => this.#create(version)))
    await this.#until(() => this.active.filter((p) => p.ready).length >= this.#o.strategy.replicas, 'initial pods to become ready')
  }

  /** Rolls every pod to `version`. Resolves when the old pods have exited and the new are ready. */
  async rollTo (version: string): Promise<void> {
    const { replicas, maxSurge, maxUnavailable } = this.#o.strategy
    const minReady = replicas - maxUnavailable
    for (;;) {
      const active = this.active
      const oldActive = active.filter((p) => p.version !== version)
      const fresh = active.filter((p) => p.version === version)
      const ready = active.filter((p) => p.ready).length
      if (oldActive.length === 0 && fresh.length >= replicas && fresh.every((p) => p.ready)) break
      let acted = false
      // Scale up the new ReplicaSet within the surge budget, counting pods still being made.
      const making = (): number => [...this.#making.values()].reduce((a, b) => a + b, 0)
      while (this.active.length + making() < replicas + maxSurge && this.active.filter((p) => p.version === version).length + (this.#making.get(version) ?? 0) < replicas) {
        this.#track(this.#create(version))
        acted = true
        await new Promise((resolve) => setImmediate(resolve))
      }
      // Scale down the old one while availability allows.
      let readyNow = ready
      for (const pod of oldActive) {
        const wouldLeave = pod.ready ? readyNow - 1 : readyNow
        if (wouldLeave < minReady) break
        if (pod.ready) readyNow--
        this.#track(this.#o.terminate(pod).then((r) => { this.terminations.push(r); this.emit('change') }))
        acted = true
      }
      if (!acted) await this.#nextChange('rollout progress')
    }
    await Promise.all(this.#pending)
  }

  #track (p: Promise<unknown>): void {
    this.#pending.add(p)
    p.finally(() => this.#pending.delete(p)).catch(() => {})
  }

  #nextChange (what: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => { this.off('change', done); reject(new Error(`rollout stalled: no progress in ${this.#o.progressDeadlineMs} ms waiting for ${what}`)) }, this.#o.progressDeadlineMs)
      const done = (): void => { clearTimeout(timer); resolve() }
      this.once('change', done)
    })
  }

  async #until (cond: () => boolean, what: string): Promise<void> {
    while (!cond()) await this.#nextChange(what)
  }

  /** Deletes every remaining pod (end of the run), the same way. */
  async drainAll (): Promise<void> {
    await Promise.all(this.active.map((p) => this.#o.terminate(p).then((r) => { this.terminations.push(r) })))
  }

  async killAll (): Promise<void> {
    await Promise.all(this.pods.map((p) => p.kill()))
  }
}
