import { envoySidecar, type EnvoySidecar } from '@lameduck/envoy'
import type { ResolvedOptions } from './options.ts'

/**
 * Envoy sidecar coordination as lifecycle steps: before registering, wait for
 * Envoy's /ready to say LIVE; after the window, drain its listeners (or fail its
 * health checks) and wait for its connections to go. Envoy errors are reported,
 * never fatal, and never shorten the drain.
 */
export function sidecarSteps (options: Exclude<ResolvedOptions['sidecar'], false>): EnvoySidecar {
  return envoySidecar(options)
}
