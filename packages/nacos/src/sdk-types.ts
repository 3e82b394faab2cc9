// Types for the parts of the `nacos` naming client (nacos-naming 2.6.3) this
// package uses, written from its source. Its own index.d.ts gets several wrong:
// Instance has no `metadata` and requires instanceId/healthy/enabled,
// getServerStatus() is typed synchronous (it returns a Promise), close() and
// the `httpclient` option are missing, and the logger is typed as `console`.

/** The SDK logs printf-style (`'%s registering %j', a, b`) or with a bare Error. */
export interface SdkLogger {
  debug(...args: unknown[]): void
  info(...args: unknown[]): void
  warn(...args: unknown[]): void
  error(...args: unknown[]): void
}

/** What registerInstance/deregisterInstance take (turned into the SDK's Instance). */
export interface SdkInstance {
  ip: string
  port: number
  /** Nacos weight 0-10000. The SDK replaces 0 by 1 (`weight || 1`). */
  weight?: number
  healthy?: boolean
  enabled?: boolean
  ephemeral?: boolean
  clusterName?: string
  metadata?: Record<string, string>
}

/** A host as the server lists it (ServiceInfo.hosts[]). */
export interface SdkHost {
  instanceId?: string
  ip: string
  port: number
  weight?: number
  healthy?: boolean
  enabled?: boolean
  ephemeral?: boolean
  clusterName?: string
  serviceName?: string
  metadata?: Record<string, unknown> | null
}

/** A ServiceInfo body (list answer or push `data`), as far as it is read here. */
export interface ServiceInfoData {
  name?: string
  dom?: string
  clusters?: string
  cacheMillis?: number
  hosts?: SdkHost[] | null
  lastRefTime?: number
  reachProtectionThreshold?: boolean
}

export interface SubscribeInfo { serviceName: string, groupName?: string, clusters?: string }

export type HostsListener = (hosts: SdkHost[], serviceInfo?: { lastRefTime?: number }) => void

export interface NamingClientOptions {
  logger: SdkLogger
  serverList?: string | string[]
  namespace?: string
  [option: string]: unknown
}

export interface NamingClient {
  ready(): Promise<void>
  registerInstance(serviceName: string, instance: SdkInstance, groupName?: string): Promise<unknown>
  deregisterInstance(serviceName: string, instance: SdkInstance, groupName?: string): Promise<unknown>
  subscribe(info: SubscribeInfo | string, listener: HostsListener): void
  unSubscribe(info: SubscribeInfo | string, listener?: HostsListener): void
  getServerStatus(): Promise<'UP' | 'DOWN'>
  /** Stops beats, polling and the UDP receiver. Does not deregister. */
  close(): Promise<void>
  on(event: 'error', listener: (err: Error) => void): unknown
}

export type NamingClientConstructor = new (options: NamingClientOptions) => NamingClient

/**
 * Internals of nacos-naming 2.6.3 the adapter hooks into to work around SDK
 * bugs. Every member is optional: each workaround checks for what it needs and
 * falls back (with a warning) when a future SDK changes them.
 */
export interface NamingClientInternals {
  _beatReactor?: {
    close?: () => Promise<void>
    _clientBeatInterval?: number
    _isClosed?: boolean
  }
  _serverProxy?: {
    _reqAPI?: (api: string, params: Record<string, string>, method: string) => Promise<string>
    queryList?: (serviceName: string, clusters: string, udpPort: number, healthyOnly: boolean) => Promise<string>
    close?: () => Promise<void>
    /** Servers the address server (endpoint mode) named. */
    serversFromEndpoint?: string[]
  }
  _hostReactor?: {
    processServiceJSON?: (json: string) => unknown
    on?: (event: 'error', listener: (err: Error) => void) => unknown
    _pushReceiver?: { udpPort?: number, on?: (event: 'error', listener: (err: Error) => void) => unknown }
  }
}
