// The sidecar container of a pod in the lab: a local Envoy in front of the app,
// terminated the way Istio's pilot-agent does it — on SIGTERM it drains the
// inbound listeners gracefully, waits terminationDrainDuration, then exits. In
// lameduck mode its preStop is `lameduck wait-drained`, so it outlives the app's drain.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createServer } from 'node:net'
import { request } from 'undici'
import { startEnvoy } from '../envoy/index.ts'
import type { ResolvedRollout } from './options.ts'
import type { SidecarContainer } from './pod.ts'

/** Istio's terminationDrainDuration default. */
const TERMINATION_DRAIN_MS = 5_000

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
}

export async function startSidecar (o: ResolvedRollout, appAdmin: () => string | null, waitDrainedCommand: string[] | null): Promise<LabSidecar> {
  const appPort = await freePort()
  const drainMs = Math.max(200, Math.round(TERMINATION_DRAIN_MS * o.scale))
  const envoy = await startEnvoy({ upstream: `http://127.0.0.1:${appPort}`, drainTimeMs: drainMs, statsFlushIntervalMs: 100 })
  let terminated: Promise<void> | null = null
  return {
    appPort,
    port: envoy.port,
    adminUrl: envoy.adminUrl,
    terminate () {
      terminated ??= (async () => {
        const admin = appAdmin()
        if (waitDrainedCommand !== null && admin !== null) {
          const [cmd, ...args] = waitDrainedCommand.map((a) => a.replaceAll('{admin}', admin))
          const hook = spawn(cmd!, args, { stdio: 'ignore' })
          await once(hook, 'exit')
        }
        // SIGTERM to pilot-agent: graceful inbound drain, terminationDrainDuration, exit.
        try {
          const res = await request(`${envoy.adminUrl}/drain_listeners?inboundonly&graceful`, { method: 'POST' })
          await res.body.dump()
        } catch {}
        await new Promise((resolve) => setTimeout(resolve, drainMs))
        await envoy.close()
      })()
      return terminated
    },
    close: () => envoy.close()
  }
}
