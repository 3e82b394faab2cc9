import type { IncomingMessage, ServerResponse } from 'node:http'
import type { NamingStore } from './naming-store.ts'
import { beat, deregister, detail, list, metrics, register, serviceList, update } from './naming-routes.ts'
import type { ResolvedNacosServerOptions } from './options.ts'
import type { PushService } from './push-service.ts'
import { NacosHttpError, readForm, RequestParams } from './request-params.ts'
import type { ServiceStorage } from './service-storage.ts'
import { clientDeregister, clientList, clientRegister, goneBody, V1_ALTERNATIVES, V3_CLIENT } from './v3-routes.ts'

// The v1 naming HTTP API and the 3.x client open API as a routes table: `METHOD path` -> resource
// (naming-routes.ts, v3-routes.ts).
// A known path with another method is a 405, anything else a 404, as Spring answers.

export { RESPONSE_CODE } from './naming-routes.ts'

export interface HttpApiContext {
  options: ResolvedNacosServerOptions
  store: NamingStore
  storage: ServiceStorage
  push: PushService
  serverList: () => string
  emit: (event: string, payload: unknown) => void
  now: () => number
}

type Handler = (p: RequestParams, req: IncomingMessage) => unknown

const BASE = '/nacos/v1/ns'

export function createHttpHandler (ctx: HttpApiContext): (req: IncomingMessage, res: ServerResponse) => void {
  const { options: o } = ctx
  const routes: Record<string, Handler> = {
    [`POST ${BASE}/instance`]: (p) => register(ctx, p),
    [`DELETE ${BASE}/instance`]: (p) => deregister(ctx, p),
    [`PUT ${BASE}/instance`]: (p) => update(ctx, p),
    [`GET ${BASE}/instance`]: (p) => detail(ctx, p),
    [`GET ${BASE}/instance/list`]: (p, req) => list(ctx, p, req),
    [`PUT ${BASE}/instance/beat`]: (p) => beat(ctx, p),
    [`GET ${BASE}/operator/metrics`]: (p) => metrics(ctx, p),
    [`GET ${BASE}/service/list`]: (p) => serviceList(ctx, p),
    [`POST ${V3_CLIENT}`]: (p) => clientRegister(ctx, p),
    [`DELETE ${V3_CLIENT}`]: (p) => clientDeregister(ctx, p),
    [`GET ${V3_CLIENT}/list`]: (p) => clientList(ctx, p),
    'GET /nacos/serverlist': () => `${ctx.serverList()}\r\n`,
    'GET /nacos/v1/console/health/liveness': () => 'OK',
    'GET /nacos/v1/console/health/readiness': () => 'OK'
  }
  const paths = new Set(Object.keys(routes).map((k) => k.slice(k.indexOf(' ') + 1)))

  return (req, res) => {
    const url = new URL(req.url ?? '/', 'http://nacos.local')
    const send = (status: number, body: unknown): void => {
      const text = typeof body === 'string' ? body : JSON.stringify(body)
      res.writeHead(status, { 'content-type': typeof body === 'string' ? 'text/plain;charset=UTF-8' : 'application/json;charset=UTF-8', 'content-length': Buffer.byteLength(text) })
      res.end(text)
    }
    readForm(req).then((form) => {
      const params = new RequestParams(url.searchParams, form)
      ctx.emit('request', { method: req.method, path: url.pathname, query: params.toObject(), headers: { ...req.headers } })
      const route = `${req.method ?? 'GET'} ${url.pathname}`
      if (!o.v1ClientApi && route in V1_ALTERNATIVES) { send(410, goneBody(route, url.pathname, ctx.now())); return }
      const handler = routes[route]
      if (handler === undefined) {
        const status = paths.has(url.pathname) ? 405 : 404
        send(status, { timestamp: new Date(ctx.now()).toISOString(), status, error: status === 404 ? 'Not Found' : 'Method Not Allowed', path: url.pathname })
        return
      }
      send(200, handler(params, req))
    }).catch((err: unknown) => {
      if (err instanceof NacosHttpError) { send(err.status, `caused: ${err.message};`); return }
      o.logger.error({ err }, `nacos: ${req.method} ${url.pathname} failed`)
      send(500, `caused: ${err instanceof Error ? err.message : String(err)};`)
    })
  }
}
