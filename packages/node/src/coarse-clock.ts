/**
 * The wall clock to the nearest few tens of ms, for stamps taken on every request.
 * Date.now() costs 30-50 ns, a sixth of what the engine adds to a request. The
 * stamp ages the requests a bound cut (in a log) and, rounded up, dates a consumer's
 * last request (earlyOffline, whose quiet period is a second by default): 50 ms is
 * exact enough for both. Cached the way Node caches its Date header: read on first
 * use, forgotten by an unref'd timer, so an idle server runs no timer at all. The
 * timer is a cost per period, not per request: at 10 ms it was most of the stamp's
 * cost on a server doing a few hundred requests a second.
 */
/** How far behind the wall clock coarseNow() may be. */
export const COARSE_MS = 50

let cached: number | undefined

function forget (): void { cached = undefined }

export function coarseNow (): number {
  if (cached === undefined) {
    cached = Date.now()
    // unref: never what keeps the process alive (optional: fake timers may not have it).
    setTimeout(forget, COARSE_MS).unref?.()
  }
  return cached
}
