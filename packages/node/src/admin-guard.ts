import type { IncomingMessage } from 'node:http'
import { isLoopback } from './host.ts'

/**
 * Why a request to the admin listener comes from a web page rather than from
 * curl, the CLI or a preStop hook, or null when it does not. A page may not
 * take the instance out (`<img src=".../offline">`, a `text/plain` form POST),
 * nor read /status through DNS rebinding (a name of the attacker's that
 * resolves to 127.0.0.1: the browser then calls it same-origin, but sends that
 * name as `Host`). Browsers mark their requests; the admin's clients never do:
 *
 * - `Sec-Fetch-Site` other than `none` (typed by the user) or `same-origin`;
 * - an `Origin` (browsers send it on POST and on every cross-origin fetch);
 * - on a loopback listener, a `Host` that is not a loopback name or address
 *   (`localhost`, 127.0.0.0/8, ::1; any port: `kubectl port-forward` keeps
 *   `localhost` with its own port). A listener bound elsewhere (the pod IP, all
 *   interfaces) is reached by names it cannot know, and needs its token anyway.
 */
export function browserRefusal (req: IncomingMessage, bindHost: string): string | null {
  const site = req.headers['sec-fetch-site']
  if (site !== undefined && site !== 'none' && site !== 'same-origin') return `a web page's request (sec-fetch-site: ${String(site)})`
  const origin = req.headers.origin
  if (origin !== undefined) return `a web page's request (origin: ${origin.slice(0, 100)})`
  const host = req.headers.host
  if (host !== undefined && host !== '' && isLoopback(bindHost) && !isLoopback(hostnameOf(host))) return `host '${host.slice(0, 100)}' is not a loopback name (DNS rebinding?); call the admin as 127.0.0.1 or localhost`
  return null
}

/** The hostname of a Host header value: `[::1]:80` -> `::1`, `localhost:54199` -> `localhost`. */
function hostnameOf (host: string): string {
  if (host.startsWith('[')) {
    const end = host.indexOf(']')
    return end === -1 ? host : host.slice(1, end)
  }
  const colon = host.indexOf(':')
  return (colon === -1 ? host : host.slice(0, colon)).toLowerCase()
}
