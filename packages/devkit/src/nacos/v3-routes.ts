// The 3.x client open API (InstanceOpenApiController, /nacos/v3/client/ns/instance) for clients
// without gRPC: register, or heartbeat with heartBeat=true (code 21003 for an unknown instance:
// register again), deregister (ok for an unknown one too), and the list (hosts without enabled=false
// ones, from the same snapshot as the v1 list). Answers are Nacos's Result JSON.
// With `v1ClientApi: false` the v1 open API answers 410 Gone as Nacos 3.2+ does by default.
import type { HttpApiContext } from './http-api.ts'
import { deregister, register } from './naming-routes.ts'
import { checkClusterName, type RequestParams } from './request-params.ts'
import { buildServiceInfo } from './service-info.ts'
import { DEFAULT_CLUSTER } from './naming-store.ts'

export const V3_CLIENT = '/nacos/v3/client/ns/instance'
/** ErrorCode.INSTANCE_NOT_FOUND */
const INSTANCE_NOT_FOUND = 21003

const success = (data: unknown): unknown => ({ code: 0, message: 'success', data })

export function clientRegister (ctx: HttpApiContext, p: RequestParams): unknown {
  if (!p.bool('heartBeat', false)) {
    register(ctx, p)
    return success('ok')
  }
  const { name } = p.service()
  const namespaceId = p.namespaceId()
  const ip = p.required('ip')
  const port = p.int('port')
  const clusterName = checkClusterName(p.get('clusterName') || DEFAULT_CLUSTER)
  const instance = ctx.store.find(namespaceId, name, ip, port, clusterName)
  const known = instance !== undefined
  if (known) ctx.store.beat(namespaceId, name, instance)
  ctx.emit('beat', { namespaceId, service: name, ip, port, clusterName, code: known ? 10200 : 20404, outcome: known ? 'ok' : 'not-found', light: true })
  return known ? success('ok') : { code: INSTANCE_NOT_FOUND, message: 'instance not found', data: null }
}

export function clientDeregister (ctx: HttpApiContext, p: RequestParams): unknown {
  deregister(ctx, p)
  return success('ok')
}

export function clientList (ctx: HttpApiContext, p: RequestParams): unknown {
  const { name, groupName } = p.service()
  const info = buildServiceInfo(ctx.storage.get(p.namespaceId(), name), { name, groupName, clusters: p.get('clusterName') ?? '', healthyOnly: false }, { ...ctx.options, now: ctx.now() })
  return success(info.hosts)
}

/** Nacos's own text names the context path as a Spring placeholder. */
const CONTEXT = '$' + '{contextPath:nacos}'
const CLIENT = `${CONTEXT}/v3/client/ns/instance`

/** The v1 open-API routes and the alternative Nacos names for each in its 410. */
export const V1_ALTERNATIVES: Record<string, string> = {
  'POST /nacos/v1/ns/instance': `POST ${CLIENT}`,
  'DELETE /nacos/v1/ns/instance': `DELETE ${CLIENT}`,
  'GET /nacos/v1/ns/instance/list': `GET ${CLIENT}/list`,
  'PUT /nacos/v1/ns/instance/beat': `POST ${CLIENT}?heartBeat=true`,
  'GET /nacos/v1/ns/operator/metrics': `GET ${CONTEXT}/v3/admin/ns/ops/metrics`
}

/** The 410 a real 3.x server sends with the 1.x client API off: Spring's error JSON around Nacos's Result. */
export function goneBody (route: string, path: string, now: number): unknown {
  const message = `Current API will be deprecated, please use API(s) \`${V1_ALTERNATIVES[route]}\` instead, or set \`nacos.core.api.compatibility.client.enabled=true\` in application.properties.`
  return { timestamp: new Date(now).toISOString(), status: 410, error: 'Gone', message: JSON.stringify({ code: 40000, message }), path }
}
