import { systemClock, type Clock } from './clock.ts'
import { InvalidOptionError } from './errors.ts'
import { serviceKey, type Discovery, type Instance, type InstanceStatus, type Registry } from './registry.ts'
import { checkKeys, duration } from './validate.ts'

export interface MemoryRegistryOptions {
  /** How long a change takes to become visible to discovery: a stand-in for registry + client caches. Default 0. */
  propagationDelayMs?: number
  clock?: Clock
}

export interface MemoryRegistry extends Registry, Discovery {
  /** Sets the status of a registered instance (e.g. OUT_OF_SERVICE); discovery shows only UP ones. */
  setStatus(instance: Pick<Instance, 'id' | 'service'>, status: InstanceStatus): Promise<void>
  /** Every instance as the registry itself holds it (no propagation delay, any status). */
  registered(service: string): Instance[]
}

const MEMORY_REGISTRY_KEYS = { propagationDelayMs: true, clock: true } satisfies Record<keyof MemoryRegistryOptions, true>

type Tables = Map<string, Map<string, Instance>>

/** An in-process Registry and Discovery; with `propagationDelayMs` it models a caching registry. */
export function memoryRegistry (options: MemoryRegistryOptions = {}): MemoryRegistry {
  if (typeof options !== 'object' || options === null) throw new InvalidOptionError('memoryRegistry', 'options must be an object')
  checkKeys('memoryRegistry', options, MEMORY_REGISTRY_KEYS)
  const delay = duration('propagationDelayMs', options.propagationDelayMs, 0)
  const truth: Tables = new Map()
  const view = delayedView(delay, options.clock ?? systemClock)
  let closed = false
  const assertOpen = (op: string): void => {
    if (closed) throw new InvalidOptionError('memoryRegistry', `${op} after close()`)
  }

  return {
    async register (instance) {
      assertOpen('register')
      const copy = structuredClone(instance)
      table(truth, instance.service).set(instance.id, copy)
      view.publish(instance.service, (t) => t.set(copy.id, copy))
    },
    async deregister (instance) {
      assertOpen('deregister')
      table(truth, instance.service).delete(instance.id)
      view.publish(instance.service, (t) => t.delete(instance.id))
    },
    async setStatus (instance, status) {
      assertOpen('setStatus')
      const current = table(truth, instance.service).get(instance.id)
      if (current === undefined) return
      const copy = { ...current, status }
      table(truth, instance.service).set(instance.id, copy)
      view.publish(instance.service, (t) => t.set(copy.id, copy))
    },
    registered (service) {
      return [...table(truth, service).values()].map((i) => structuredClone(i))
    },
    instances: (service) => view.upList(service),
    subscribe: (service, onChange) => view.subscribe(service, onChange),
    async close () {
      closed = true
      view.close()
    },
    describe () {
      return { type: 'memory', propagationDelayMs: delay }
    },
    windows: { clientFetchMs: delay }
  }
}

function table (map: Tables, service: string): Map<string, Instance> {
  const key = serviceKey(service)
  let t = map.get(key)
  if (t === undefined) { t = new Map(); map.set(key, t) }
  return t
}

/** What discovery sees: each change applied `delay` ms after the registry took it, then pushed to subscribers. */
function delayedView (delay: number, clock: Clock) {
  const visible: Tables = new Map()
  const listeners = new Map<string, Set<(list: Instance[]) => void>>()
  const timers = new Set<ReturnType<Clock['setTimeout']>>()

  function upList (service: string): Instance[] {
    const t = visible.get(serviceKey(service))
    if (t === undefined) return []
    const list: Instance[] = []
    for (const i of t.values()) if (i.status === 'UP') list.push(structuredClone(i))
    return list
  }

  return {
    upList,
    publish (service: string, apply: (t: Map<string, Instance>) => void): void {
      const run = (): void => {
        apply(table(visible, service))
        const subs = listeners.get(serviceKey(service))
        if (subs === undefined) return
        const list = upList(service)
        for (const fn of subs) fn(list)
      }
      if (delay === 0) { run(); return }
      const timer = clock.setTimeout(() => { timers.delete(timer); run() }, delay)
      timer.unref?.()
      timers.add(timer)
    },
    subscribe (service: string, onChange: (list: Instance[]) => void): () => void {
      const key = serviceKey(service)
      let subs = listeners.get(key)
      if (subs === undefined) { subs = new Set(); listeners.set(key, subs) }
      subs.add(onChange)
      return () => { subs.delete(onChange) }
    },
    close (): void {
      for (const t of timers) clock.clearTimeout(t)
      timers.clear()
      listeners.clear()
    }
  }
}
