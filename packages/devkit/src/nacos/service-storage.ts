// ServiceStorage: the ServiceInfo snapshot a real Nacos 2.x/3.x server answers v1
// `/instance/list` from. It is computed on the first read and refreshed only when the
// service's push task runs (PushExecuteTask -> getPushData), so a list call between a
// change and that task still shows the old hosts, push or no push.
import type { NamingStore, StoredService } from './naming-store.ts'

export class ServiceStorage {
  readonly #store: NamingStore
  readonly #snapshots = new Map<string, StoredService | undefined>()

  constructor (store: NamingStore) {
    this.#store = store
  }

  /** The snapshot, taken now if the service has none yet. */
  get (namespaceId: string, name: string): StoredService | undefined {
    const key = `${namespaceId}>${name}`
    return this.#snapshots.has(key) ? this.#snapshots.get(key) : this.refresh(namespaceId, name)
  }

  /** The push task ran: take a new snapshot of the live store. */
  refresh (namespaceId: string, name: string): StoredService | undefined {
    const live = this.#store.service(namespaceId, name)
    const snapshot = live === undefined
      ? undefined
      : { ...live, instances: new Map([...live.instances].map(([k, i]) => [k, { ...i, metadata: { ...i.metadata } }])) }
    this.#snapshots.set(`${namespaceId}>${name}`, snapshot)
    return snapshot
  }

  clear (): void {
    this.#snapshots.clear()
  }
}
