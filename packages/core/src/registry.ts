import type { LifecycleObserver } from './observer.ts'
import type { WindowsInput } from './windows.ts'

// The two roles a registry plays. The plugin uses Registry; the balancer uses
// Discovery. Adapters (Eureka, Nacos, memory) implement both.

export type InstanceStatus = 'UP' | 'DOWN' | 'OUT_OF_SERVICE' | 'STARTING'

export interface Instance {
  id: string
  service: string
  host: string
  port: number
  status: InstanceStatus
  metadata: Record<string, string>
}

/** What the lifecycle passes with each register/deregister call. */
export interface RegistryCallOptions {
  /**
   * Aborted when the lifecycle stops waiting for this call (registryTimeoutMs).
   * Stop the call and settle soon: the next registry call for the instance waits
   * until this one has settled, so that calls land in the order issued.
   */
  signal?: AbortSignal
}

export interface Registry {
  register(instance: Instance, options?: RegistryCallOptions): Promise<void>
  deregister(instance: Instance, options?: RegistryCallOptions): Promise<void>
  close(): Promise<void>
  /** Optional: a short JSON-friendly description for /status (adapter name, server, last error). */
  describe?(): Record<string, unknown>
  /** Optional: the propagation window this registry implies, used when the user sets none. */
  readonly windows?: WindowsInput
  /** Optional: collaborators the adapter brings (its weight ramp); the engine attaches them to the lifecycle beside its own. */
  readonly observers?: readonly LifecycleObserver[]
}

export interface Discovery {
  /** The instances consumers may route to (status UP), as the consumer currently sees them. */
  instances(service: string): Instance[]
  /** Calls `onChange` with the new list whenever it changes. Returns an unsubscribe function. */
  subscribe(service: string, onChange: (list: Instance[]) => void): () => void
}

/** Service names compare case-insensitively (Eureka upper-cases app names). */
export function serviceKey (service: string): string {
  return service.toLowerCase()
}
