/**
 * The wall clock to the nearest few ms, for stamps taken on every request.
 * Date.now() costs 30–50 ns, a sixth of what the engine adds to a request; the
 * stamp only ages the requests a bound cut, in a log, where 10 ms is exact enough.
 * Cached the way Node caches its Date header: read on first use, forgotten by an
 * unref'd timer, so an idle server runs no timer at all.
 */
/** How far behind the wall clock coarseNow() may be. */
export const COARSE_MS = 10

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
