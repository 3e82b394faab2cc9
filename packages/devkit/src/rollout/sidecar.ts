// The sidecar container of a pod in the lab: a local Envoy with Istio's bootstrap
// in front of the app, the app's own registry calls captured by its outbound
// listener, and terminated the way Istio's pilot-agent does it (terminateLikeIstio):
// drain the inbound listeners gracefully, then wait terminationDrainDuration — or, with
// EXIT_ON_ZERO_ACTIVE_CONNECTIONS, poll the connection count to 0 — and exit. In
// lameduck mode its preStop is `lameduck wait-drained`, so it outlives the app's drain.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createServer } from 'node:net'
import { startEnvoy, terminateLikeIstio } from '../envoy/index.ts'
import type { ResolvedRollout } from './options.ts'
import type { SidecarContainer } from './pod.ts'

/** Istio's defaults, scaled with the rest: terminationDrainDuration, MINIMUM_DRAIN_DURATION, drain-time-s. */
export const ISTIO = { terminationDrainDurationMs: 5_000, minimumDrainDurationMs: 5_000, drainTimeMs: 45_000, checkIntervalMs: 1_000 }

export async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

export interface LabSidecar extends SidecarContainer {
  /** The port the app container must listen on (the sidecar's upstream). */
  readonly appPort: number
  /** The outbound listener the app sends its registry calls to, or null. */
  readonly outboundUrl: string | null
}

export async function startSidecar (o: ResolvedRollout, appAdmin: () => string | null, waitDrainedCommand: string[] | null, registryOrigin: string | undefined): Promise<LabSidecar> {
  const appPort = await freePort()
  const scaled = (ms: number): number => Math.max(100, Math.round(ms * o.scale))
  const envoy = await startEnvoy({
    upstream: `http://127.0.0.1:${appPort}`,
    drainTimeMs: scaled(ISTIO.drainTimeMs),
    statsFlushIntervalMs: 100,
    istio: { exitOnZeroActiveConnections: o.exitOnZeroActiveConnections },
    ...(registryOrigin ? { outbound: registryOrigin } : {})
  })
  let terminated: Promise<void> | null = null
  return {
    appPort,
    port: envoy.port,
    adminUrl: envoy.adminUrl,
    outboundUrl: envoy.outboundUrl,
    terminate () {
      terminated ??= (async () => {
        const admin = appAdmin()
        if (waitDrainedCommand !== null && admin !== null) {
          const [cmd, ...args] = waitDrainedCommand.map((a) => a.replaceAll('{admin}', admin))
          const hook = spawn(cmd!, args, { stdio: 'ignore' })
          await once(hook, 'exit')
        }
        // SIGTERM to pilot-agent.
        await terminateLikeIstio(envoy, {
          terminationDrainDurationMs: scaled(ISTIO.terminationDrainDurationMs),
          minimumDrainDurationMs: scaled(ISTIO.minimumDrainDurationMs),
          checkIntervalMs: scaled(ISTIO.checkIntervalMs)
        })
      })()
      return terminated
    },
    close: () => envoy.close()
  }
}
