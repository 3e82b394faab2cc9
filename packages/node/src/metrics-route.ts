import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2'
import { isPath } from './url-path.ts'

export const PROMETHEUS_TEXT = 'text/plain; version=0.0.4; charset=utf-8'

/**
 * `GET|HEAD <path>` on the application listener, answered before the app sees
 * it: the metrics only (read-only, no token; nothing else of the admin API is
 * on the app port). A scrape is not application traffic: it is not counted in flight.
 */
export function metricsRoute (path: string, render: () => string): (req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse) => boolean {
  return (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false
    if (!isPath(req.url ?? '', path)) return false
    const text = render()
    res.statusCode = 200
    res.setHeader('content-type', PROMETHEUS_TEXT)
    res.setHeader('content-length', Buffer.byteLength(text))
    if (req.method === 'HEAD') res.end(); else res.end(text)
    return true
  }
}
