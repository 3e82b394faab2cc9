import type * as Envoy from '@lameduck/envoy'
import { InvalidOptionError, duration, fn, record, type DrainStep } from '@lameduck/core'
import { type LameduckOptions, type ResolvedSidecar, type SidecarSteps } from './options.ts'

/**
 * @lameduck/envoy, loaded only when an Envoy sidecar is configured: most apps have none, and a
 * package once loaded stays on the heap that every full GC marks. require() of its ES module
 * (Node >= 22.12) keeps the options checked synchronously, at attach().
 */
function envoy (): typeof Envoy {
  return process.getBuiltinModule('node:module').createRequire(import.meta.url)('@lameduck/envoy') as typeof Envoy
}

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
  record('sidecar', sc, "{ envoyAdmin: 'http://127.0.0.1:15000' }, a steps object { beforeRegister, afterWindow, close }, or false")
  if (isSteps(sc)) {
    for (const name of ['beforeRegister', 'afterWindow'] as const) {
      const list = sc[name]
      if (list !== undefined && (!Array.isArray(list) || list.some((s) => typeof s?.run !== 'function' || typeof s.name !== 'string'))) {
        throw new InvalidOptionError(`sidecar.${name}`, 'must be an array of { name, run(ctx) } steps')
      }
    }
    const close = sc.close === undefined ? undefined : fn<() => Promise<void>>('sidecar.close', sc.close, 'async () => client.close()')
    const drainTimeoutMs = duration('sidecar.drainTimeoutMs', sc.drainTimeoutMs, 0)
    return { beforeRegister: sc.beforeRegister ?? [], afterWindow: budgeted(sc.afterWindow ?? [], drainTimeoutMs), close: async () => { await close?.() }, drainTimeoutMs }
  }
  // envoySidecar() checks its own options (named sidecar.*); here only what this host adds: the URL is required.
  if ((sc as { envoyAdmin?: unknown }).envoyAdmin === undefined) throw new InvalidOptionError('sidecar.envoyAdmin', "required: the Envoy admin URL, e.g. 'http://127.0.0.1:15000' (or give a steps object { beforeRegister, afterWindow, close })")
  const sidecar = envoy().envoySidecar(sc)
  return { beforeRegister: sidecar.beforeRegister, afterWindow: budgeted(sidecar.afterWindow, sidecar.options.drainTimeoutMs), close: () => sidecar.close(), drainTimeoutMs: sidecar.options.drainTimeoutMs }
}

/**
 * The sidecar's drain bound, declared on its steps (when none declares one) so the
 * lifecycle's shutdown budget counts it: an unconfirmed deregistration may then not
 * stretch the window into the time the sidecar drain needs.
 */
function budgeted (steps: DrainStep[], drainTimeoutMs: number): DrainStep[] {
  if (steps.length === 0 || drainTimeoutMs === 0 || steps.some((s) => s.budgetMs !== undefined)) return steps
  const last = steps[steps.length - 1]!
  return [...steps.slice(0, -1), { name: last.name, budgetMs: drainTimeoutMs, run: (ctx) => last.run(ctx) }]
}
