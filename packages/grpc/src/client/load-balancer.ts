// The 'lameduck' load-balancing policy for grpc-js: one pick_first leaf per
// endpoint (connections kept to all, as round_robin does), picks weighted by the
// warmup ramp (smooth weighted round robin), `x-lameduck-consumer` on every call,
// and a call's trailers saying the instance is leaving take it out at once.
// Built on grpc-js's experimental LB API (1.10+: LeafLoadBalancer, Endpoint).
import { CONSUMER_HEADER, isLeaving, STATE_HEADER } from '@lameduck/core'
import { connectivityState as ConnectivityState, experimental, type ChannelOptions, type Metadata, type StatusObject } from '@grpc/grpc-js'
import type { ServiceView } from './service-view.ts'

const { LeafLoadBalancer, PickResultType, QueuePicker, UnavailablePicker, createChildChannelControlHelper, subchannelAddressToString } = experimental
type Leaf = InstanceType<typeof LeafLoadBalancer>

export const LB_POLICY = 'lameduck'
/** The resolver hands the service view to the policy under this channel-args key; the prefix keeps it out of subchannel args. */
export const VIEW_KEY = `${experimental.SUBCHANNEL_ARGS_EXCLUDE_KEY_PREFIX}.lameduck_view`

export class LameduckLbConfig implements experimental.TypedLoadBalancingConfig {
  getLoadBalancerName (): string { return LB_POLICY }
  toJsonObject (): object { return { [LB_POLICY]: {} } }
  static createFromJson (_obj: unknown): LameduckLbConfig { return new LameduckLbConfig() }
}

interface Child {
  key: string
  leaf: Leaf
  /** Reads the call's trailers (set once per child, so a pick allocates nothing for it). */
  onCallEnded: experimental.PickResult['onCallEnded']
}

/** Smooth weighted round robin (nginx's): deterministic, spreads an instance's picks evenly. */
class WeightedPicker implements experimental.Picker {
  readonly #children: Child[]
  readonly #pickers: experimental.Picker[]
  readonly #weights: number[]
  readonly #current: number[]
  readonly #total: number
  readonly #consumerId: string | null

  constructor (children: Child[], weights: number[], consumerId: string | null) {
    this.#children = children
    this.#pickers = children.map((c) => c.leaf.getPicker())
    this.#weights = weights
    this.#current = weights.map(() => 0)
    this.#total = weights.reduce((a, b) => a + b, 0)
    this.#consumerId = consumerId
  }

  pick (args: experimental.PickArgs): experimental.PickResult {
    let best = 0
    const current = this.#current
    for (let i = 0; i < current.length; i++) {
      current[i]! += this.#weights[i]!
      if (current[i]! > current[best]!) best = i
    }
    current[best]! -= this.#total
    const result = this.#pickers[best]!.pick(args)
    if (result.pickResultType !== PickResultType.COMPLETE) return result
    // The metadata a picker gets is the copy the call sends.
    if (this.#consumerId !== null) args.metadata.set(CONSUMER_HEADER, this.#consumerId)
    const child = this.#children[best]!
    if (result.onCallEnded === null) return { ...result, onCallEnded: child.onCallEnded }
    const inner = result.onCallEnded
    return { ...result, onCallEnded: (code, details, md) => { inner(code, details, md); child.onCallEnded?.(code, details, md) } }
  }
}

export class LameduckLoadBalancer implements experimental.LoadBalancer {
  readonly #helper: experimental.ChannelControlHelper
  readonly #childHelper: experimental.ChannelControlHelper
  #children = new Map<string, Child>()
  #view: ServiceView | null = null
  #paused = false
  #lastError: string | null = null
  #cancelTick: (() => void) | undefined

  constructor (helper: experimental.ChannelControlHelper) {
    this.#helper = helper
    this.#childHelper = createChildChannelControlHelper(helper, {
      updateState: (_state, _picker, error) => {
        if (error) this.#lastError = error
        this.#update()
      }
    })
  }

  updateAddressList (list: experimental.StatusOr<experimental.Endpoint[]>, config: experimental.TypedLoadBalancingConfig, options: ChannelOptions, note: string): boolean {
    if (!(config instanceof LameduckLbConfig)) return false
    if (!list.ok) {
      if (this.#children.size === 0) this.#helper.updateState(ConnectivityState.TRANSIENT_FAILURE, new UnavailablePicker(list.error), list.error.details)
      return true
    }
    this.#view = (options[VIEW_KEY] as ServiceView | undefined) ?? null
    const next = new Map<string, Child>()
    this.#paused = true
    for (const endpoint of list.value) {
      const address = endpoint.addresses[0]
      if (address === undefined) continue
      const key = subchannelAddressToString(address)
      if (next.has(key)) continue
      const existing = this.#children.get(key)
      if (existing !== undefined) {
        existing.leaf.updateEndpoint(endpoint, options)
        next.set(key, existing)
        continue
      }
      const leaf = new LeafLoadBalancer(endpoint, this.#childHelper, options, note)
      next.set(key, { key, leaf, onCallEnded: this.#trailerReader(key) })
      leaf.startConnecting()
    }
    // A child leaving the list stops being picked; its subchannel's calls in flight finish.
    for (const [key, child] of this.#children) if (!next.has(key)) child.leaf.destroy()
    this.#children = next
    this.#paused = false
    if (next.size === 0) {
      const message = `no instance to call${note ? ` (${note})` : ''}`
      this.#helper.updateState(ConnectivityState.TRANSIENT_FAILURE, new UnavailablePicker({ details: message }), message)
      return true
    }
    this.#update()
    return true
  }

  #trailerReader (key: string): experimental.PickResult['onCallEnded'] {
    return (_code: StatusObject['code'], _details: string, trailers: Metadata) => {
      const values = trailers.get(STATE_HEADER)
      if (values.length === 0) return
      const state = String(values[values.length - 1]).trim().toLowerCase()
      this.#view?.observeState(key, state, isLeaving(state))
    }
  }

  /** Recomputes the state and the picker from the children's states and the ramp. */
  #update (): void {
    if (this.#paused) return
    const children = [...this.#children.values()]
    const ready = children.filter((c) => c.leaf.getConnectivityState() === ConnectivityState.READY)
    if (ready.length > 0) this.#publishReady(ready)
    else if (children.some((c) => c.leaf.getConnectivityState() === ConnectivityState.CONNECTING)) this.#helper.updateState(ConnectivityState.CONNECTING, new QueuePicker(this), null)
    else if (children.some((c) => c.leaf.getConnectivityState() === ConnectivityState.TRANSIENT_FAILURE)) {
      const message = `lameduck: no connection established. Last error: ${this.#lastError}`
      this.#helper.updateState(ConnectivityState.TRANSIENT_FAILURE, new UnavailablePicker({ details: message }), message)
    } else this.#helper.updateState(ConnectivityState.IDLE, new QueuePicker(this), null)
    // Keep every instance connected, as round_robin does.
    for (const c of children) if (c.leaf.getConnectivityState() === ConnectivityState.IDLE) c.leaf.exitIdle()
  }

  #publishReady (ready: Child[]): void {
    const view = this.#view
    const now = view?.now() ?? 0
    const weights = ready.map((c) => {
      const e = view?.entry(c.key)
      return view === null || e === undefined ? 1 : view.weightOf(e, now)
    })
    const picked = ready.filter((_c, i) => weights[i]! > 0)
    if (picked.length === 0) {
      const message = `lameduck: all ${ready.length} connected instances have weight 0`
      this.#helper.updateState(ConnectivityState.TRANSIENT_FAILURE, new UnavailablePicker({ details: message }), message)
      return
    }
    this.#helper.updateState(ConnectivityState.READY, new WeightedPicker(picked, weights.filter((w) => w > 0), view?.consumerId ?? null), null)
    this.#scheduleTick(now)
  }

  /** While an instance warms, weights change with time: recompute on a tick. */
  #scheduleTick (now: number): void {
    if (this.#cancelTick !== undefined || this.#view === null) return
    const ms = this.#view.tickMs(now)
    if (ms === undefined) return
    this.#cancelTick = this.#view.schedule(() => { this.#cancelTick = undefined; this.#update() }, ms)
  }

  exitIdle (): void {
    for (const c of this.#children.values()) c.leaf.exitIdle()
  }

  resetBackoff (): void {}

  destroy (): void {
    this.#cancelTick?.()
    this.#cancelTick = undefined
    for (const c of this.#children.values()) c.leaf.destroy()
    this.#children.clear()
  }

  getTypeName (): string { return LB_POLICY }
}

let registered = false

/** Registers the policy with grpc-js once per process. */
export function registerLameduckPolicy (): void {
  if (registered) return
  experimental.registerLoadBalancerType(LB_POLICY, LameduckLoadBalancer, LameduckLbConfig)
  registered = true
}
