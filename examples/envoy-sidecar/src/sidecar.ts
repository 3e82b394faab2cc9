// The pod's sidecar: a local Envoy from @lameduck/devkit (HTTP proxy + admin
// API with Envoy's drain manager) in front of the app. Development only:
// production runs Istio's or your own Envoy.
//   npm run sidecar -w @lameduck/example-envoy-sidecar          # POD=a: :15006 → app :3000, admin :15000
// Ctrl-C stops it at once, as SIGTERM stops Envoy: a sidecar that goes before
// its app is exactly what the README's Kubernetes settings prevent.
import { startEnvoy, type LocalEnvoy } from '@lameduck/devkit'
import type { Logger } from '@lameduck/core'
import { clock, podPorts, readSettings, type Settings } from './settings.ts'

export interface SidecarOptions {
  pod: string
  /** The app: http://127.0.0.1:PORT. */
  upstream: string
  /** Inbound listener port; 0 picks one. */
  listen: number
  /** Admin API port; 0 picks one. */
  admin: number
  settings: Settings
  print?: (line: string) => void
}

/** Envoy's own log lines (listening, initialized, drain started, listeners stopped), one per line. */
function lineLogger (pod: string, print: (line: string) => void): Logger {
  const line = (_obj: object, msg?: string): void => { if (msg) print(`${clock()}  ${pod} ${msg.replace(/^envoy: /, '')}`) }
  return { debug: () => {}, info: line, warn: line, error: line }
}

export async function startSidecar (o: SidecarOptions): Promise<LocalEnvoy> {
  return await startEnvoy({
    upstream: o.upstream,
    listen: o.listen,
    admin: o.admin,
    // Istio runs Envoy with --drain-time-s 45 and the immediate strategy: once drained,
    // every response says `connection: close`, and the listener stops after the drain time.
    drainTimeMs: o.settings.envoyDrainTimeMs,
    drainStrategy: 'immediate',
    logger: lineLogger(`envoy-${o.pod}`, o.print ?? console.log)
  })
}

if (import.meta.main) {
  const s = readSettings()
  const pod = process.env.POD || 'a'
  const ports = podPorts(pod)
  const envoy = await startSidecar({
    pod,
    upstream: process.env.UPSTREAM || `http://127.0.0.1:${ports.app}`,
    listen: Number(process.env.LISTEN ?? ports.listen),
    admin: Number(process.env.ENVOY_ADMIN_PORT ?? ports.envoyAdmin),
    settings: s
  })
  console.log(`${clock()}  envoy-${pod} proxies ${envoy.url} → ${envoy.options.upstream.href}, admin ${envoy.adminUrl}; drain time ${s.envoyDrainTimeMs} ms (Istio 45 s × SCALE ${s.scale}). Ctrl-C stops it at once.`)
  const stop = (): void => { envoy.close().then(() => console.log(`${clock()}  envoy-${pod} stopped`), console.error) }
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
}
