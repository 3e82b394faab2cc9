// One POST of a JSON object to the API server (creating an Event), bounded in time and size.
// The pod events are the package's only writes by POST; reads and patches go through ApiClient.
import http from 'node:http'
import https from 'node:https'
import { apiError } from './api-client.ts'
import type { ApiConnection } from './connection.ts'
import { KubernetesApiError, KubernetesStreamError } from './errors.ts'

/** Largest answer read back (an Event is well under it); the rest is dropped. */
const MAX_ANSWER_BYTES = 64 * 1024

export class JsonPoster {
  readonly #conn: ApiConnection
  readonly #timeoutMs: number
  readonly #agent: http.Agent

  constructor (conn: ApiConnection, timeoutMs: number) {
    this.#conn = conn
    this.#timeoutMs = timeoutMs
    this.#agent = conn.server.protocol === 'https:'
      ? new https.Agent({ keepAlive: true, ca: conn.ca, cert: conn.cert, key: conn.key, rejectUnauthorized: !conn.insecure })
      : new http.Agent({ keepAlive: true })
  }

  /** POSTs `body` to `path`; resolves on 201/200, rejects with KubernetesApiError (403: ..._FORBIDDEN) otherwise. A 401 reads the token again and tries once more. */
  async post (path: string, body: unknown, what: string): Promise<void> {
    try {
      await this.#once(path, body, what)
    } catch (err) {
      if (!(err instanceof KubernetesApiError) || err.status !== 401) throw err
      this.#conn.tokenRejected()
      await this.#once(path, body, what)
    }
  }

  #once (path: string, body: unknown, what: string): Promise<void> {
    const { server } = this.#conn
    const token = this.#conn.token()
    const data = Buffer.from(JSON.stringify(body))
    const mod = server.protocol === 'https:' ? https : http
    return new Promise((resolve, reject) => {
      const req = mod.request({
        host: server.hostname.replace(/^\[|\]$/g, ''),
        port: server.port === '' ? undefined : Number(server.port),
        path: `${server.pathname.replace(/\/$/, '')}${path}`,
        method: 'POST',
        agent: this.#agent,
        headers: {
          accept: 'application/json',
          'content-type': 'application/json',
          'content-length': data.length,
          ...(token === undefined ? {} : { authorization: `Bearer ${token}` })
        },
        signal: AbortSignal.timeout(this.#timeoutMs)
      }, (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => { if (text.length < MAX_ANSWER_BYTES) text += chunk })
        res.on('end', () => {
          const status = res.statusCode ?? 0
          if (status === 200 || status === 201) resolve()
          else reject(apiError(status, text, what))
        })
        res.on('error', (err) => { reject(new KubernetesStreamError(what, `the answer broke: ${err.message}`, { cause: err })) })
      })
      req.on('error', (err) => {
        const why = err.name === 'AbortError' || err.name === 'TimeoutError' ? `no answer within ${this.#timeoutMs} ms` : err.message
        reject(new KubernetesStreamError(what, why, { cause: err }))
      })
      req.end(data)
    })
  }

  close (): void { this.#agent.destroy() }
}
