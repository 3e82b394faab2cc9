import { envoySidecar } from '@lameduck/envoy'
import { InvalidOptionError, SHUTDOWN_DEFAULTS, assertDuration } from '@lameduck/core'
import { type, type LameduckOptions, type ResolvedSidecar, type SidecarSteps } from './options.ts'

function isSteps (sc: object): sc is SidecarSteps {
  return !('envoyAdmin' in sc) && ('beforeRegister' in sc || 'afterWindow' in sc)
}

/**
 * The sidecar as lifecycle steps. Given options, an Envoy sidecar: before
 * registering, wait for Envoy's /ready to say LIVE; after the window, drain its
 * listeners (or fail its health checks) and wait for its connections to go.
 * Envoy errors are reported, never fatal, and never shorten the drain. Given a
 * steps object, those steps as they are.
 */
export function resolveSidecar (sc: LameduckOptions['sidecar']): ResolvedSidecar | false {
  if (sc === undefined || sc === false) return false
  if (typeof sc !== 'object' || sc === null) throw new InvalidOptionError('sidecar', `must be an object like { envoyAdmin: 'http://127.0.0.1:15000' }, a steps object { beforeRegister, afterWindow, close }, or false (got ${type(sc)})`)
  if (isSteps(sc)) {
    for (const name of ['beforeRegister', 'afterWindow'] as const) {
      const list = sc[name]
      if (list !== undefined && (!Array.isArray(list) || list.some((s) => typeof s?.run !== 'function' || typeof s.name !== 'string'))) {
        throw new InvalidOptionError(`sidecar.${name}`, 'must be an array of { name, run(ctx) } steps')
      }
    }
    if (sc.close !== undefined && typeof sc.close !== 'function') throw new InvalidOptionError('sidecar.close', `must be a function (got ${type(sc.close)})`)
    const drainTimeoutMs = sc.drainTimeoutMs ?? 0
    assertDuration('sidecar.drainTimeoutMs', drainTimeoutMs)
    return { beforeRegister: sc.beforeRegister ?? [], afterWindow: sc.afterWindow ?? [], close: async () => { await sc.close?.() }, drainTimeoutMs }
  }
  if (typeof sc.envoyAdmin !== 'string' || !URL.canParse(sc.envoyAdmin)) throw new InvalidOptionError('sidecar.envoyAdmin', `must be the Envoy admin URL, e.g. 'http://127.0.0.1:15000' (got ${type((sc as { envoyAdmin?: unknown }).envoyAdmin)})`)
  const drainTimeoutMs = sc.drainTimeoutMs ?? SHUTDOWN_DEFAULTS.sidecarDrainTimeoutMs
  assertDuration('sidecar.drainTimeoutMs', drainTimeoutMs)
  const envoy = envoySidecar(sc)
  return { beforeRegister: envoy.beforeRegister, afterWindow: envoy.afterWindow, close: () => envoy.close(), drainTimeoutMs: envoy.options.drainTimeoutMs }
}
