// Real Envoy for the suites: the devkit's `startRealEnvoy` (the bootstrap as Istio and Contour lay
// it out, every port bound by Envoy, stopped by its PID) on the binary test/real/envoy/install.sh
// caches outside the repo, installed on first use (one install per machine).
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { startRealEnvoy as start, type RealEnvoy, type RealEnvoyOptions } from '@lameduck/devkit'

export type { RealEnvoy, RealEnvoyOptions }
export type EnvoyLayout = NonNullable<RealEnvoyOptions['layout']>

const INSTALL = fileURLToPath(new URL('../envoy/install.sh', import.meta.url))

let binary: string | undefined

/** The cached binary, installing it on first use (one install per machine). */
export function envoyBinary (): string {
  if (binary !== undefined) return binary
  const fromEnv = process.env.LAMEDUCK_ENVOY_BIN
  if (fromEnv !== undefined && existsSync(fromEnv)) return (binary = fromEnv)
  const out = execFileSync('bash', [INSTALL], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim().split('\n')
  binary = out[out.length - 1]!
  return binary
}

export function startRealEnvoy (options: RealEnvoyOptions): Promise<RealEnvoy> {
  return start({ bin: envoyBinary(), ...options })
}
