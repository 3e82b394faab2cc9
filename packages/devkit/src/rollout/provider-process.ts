// What every provider "container" of the lab shares, HTTP (provider-app.ts) or gRPC
// (grpc-provider.ts): the config from argv, JSON-line events on stdout, the event-loop
// lag report, and the registry the config names.
import { monitorEventLoopDelay } from 'node:perf_hooks'
import type { Registry, WindowsInput } from '@lameduck/core'
import type { ServeSpec } from './transport.ts'

export interface ProviderConfig {
  id: string
  version: string
  mode: 'naive' | 'sleep' | 'lameduck'
  service: string
  registry: { kind: 'eureka', url: string, heartbeatMs: number } | { kind: 'nacos', serverList: string } | { kind: 'none' }
  windows: WindowsInput
  warmupMs: number
  maxRequestMs: number
  /** Port to advertise (the sidecar's listener when there is one). */
  advertisePort?: number
  /** A listening socket inherited from the pod at this fd (the sidecar's upstream). Default: listen on any free port. */
  listenFd?: number
  /** The Envoy sidecar's admin, and the scaled waits of the drain step. */
  sidecar?: { envoyAdmin: string, unavailableWaitMs: number, drainTimeoutMs: number, idleQuietMs: number }
  /** Transport and TLS material. Default plain HTTP/1.1. */
  serve?: ServeSpec
  /** Simulated boot: ms before the app is ready (readiness fails until then). */
  bootMs: number
  shutdownTimeoutMs?: number
  /** Misbehave: ignore SIGTERM entirely (the lab checks the SIGKILL at the grace period). */
  ignoreSigterm?: boolean
}

export type Emit = (event: Record<string, unknown>) => void

/** The child's config (argv[2]) and its event line writer; starts the lag report. */
export function providerProcess (): { config: ProviderConfig, emit: Emit } {
  const config = JSON.parse(process.argv[2] ?? '{}') as ProviderConfig
  const emit: Emit = (event) => { process.stdout.write(JSON.stringify({ t: Date.now(), id: config.id, ...event }) + '\n') }
  // Event-loop lag of this process, reported every 500 ms: a starved CPU shows here
  // (timers fire late), so the report can say how late instead of hiding it in slack.
  const lag = monitorEventLoopDelay({ resolution: 10 })
  lag.enable()
  setInterval(() => {
    emit({ event: 'lag', p99Ms: Math.round(lag.percentile(99) / 1e6), maxMs: Math.round(lag.max / 1e6) })
    lag.reset()
  }, 500).unref()
  return { config, emit }
}

/** The registry the config names (none for the Service path). */
export async function providerRegistry (config: ProviderConfig): Promise<Registry | undefined> {
  const r = config.registry
  if (r.kind === 'eureka') {
    const { eurekaRegistry } = await import('@lameduck/eureka')
    return eurekaRegistry({ url: r.url, client: { eureka: { heartbeatInterval: r.heartbeatMs, registryFetchInterval: r.heartbeatMs } } } as never) as unknown as Registry
  }
  if (r.kind === 'nacos') {
    const { nacosRegistry } = await import('@lameduck/nacos')
    return nacosRegistry({ serverList: r.serverList } as never) as unknown as Registry
  }
  return undefined
}
