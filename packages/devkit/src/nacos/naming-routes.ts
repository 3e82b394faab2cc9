// The v1 naming resources (InstanceController, OperatorController, ServiceController)
// as far as v1 clients use them, one function each; responses follow Nacos 2.x/3.x.
import type { IncomingMessage } from 'node:http'
import type { HttpApiContext } from './http-api.ts'
import { DEFAULT_CLUSTER, instanceTimeouts, PRESERVED, type StoredInstance } from './naming-store.ts'
import {
  agentOf, canPush, checkClusterName, NacosHttpError, parseMetadata, parseWeight, peerAddress, pushAddress, type RequestParams
} from './request-params.ts'
import { buildServiceInfo, type ServiceInfoQuery } from './service-info.ts'

export const RESPONSE_CODE = { ok: 10200, resourceNotFound: 20404 } as const

const settings = (ctx: HttpApiContext): Parameters<typeof buildServiceInfo>[2] => ({ ...ctx.options, now: ctx.now() })

const identity = (p: RequestParams): { namespaceId: string, name: string, groupName: string, ip: string, port: number, clusterName: string } => {
  const { name, groupName } = p.service()
  const ip = p.required('ip')
  const port = p.int('port')
  if (port < 1 || port > 65535) throw new NacosHttpError(400, `Param 'port' must be from 1 to 65535, got ${port}.`)
  const clusterName = checkClusterName(p.get('clusterName') || p.get('cluster') || DEFAULT_CLUSTER)
  return { namespaceId: p.namespaceId(), name, groupName, ip, port, clusterName }
}

export function register (ctx: HttpApiContext, p: RequestParams): unknown {
  const { options: o, store } = ctx
  const id = identity(p)
  const instance = {
    ip: id.ip,
    port: id.port,
    clusterName: id.clusterName,
    weight: parseWeight(p.get('weight')),
    healthy: p.bool('healthy', true),
    enabled: p.bool('enabled', p.bool('enable', true)),
    ephemeral: p.bool('ephemeral', true),
    metadata: parseMetadata(p.get('metadata'))
  }
  // Like NamingUtils.checkInstanceIsLegal; only preserved.* metadata can break it
  // (server defaults may be scaled down in any proportion).
  const t = instanceTimeouts(instance, o)
  const preserved = Object.values(PRESERVED).some((key) => key in instance.metadata)
  if (preserved && (t.beatIntervalMs > t.beatTimeoutMs || t.beatIntervalMs > t.deleteTimeoutMs)) {
    throw new NacosHttpError(400, 'Instance \'heart beat interval\' must less than \'heart beat timeout\' and \'ip delete timeout\'.')
  }
  store.register(id.namespaceId, id.name, id.groupName, instance)
  return 'ok'
}

export function deregister (ctx: HttpApiContext, p: RequestParams): unknown {
  const { store } = ctx
  const id = identity(p)
  store.deregister(id.namespaceId, id.name, id.ip, id.port, id.clusterName)
  return 'ok'
}

export function update (ctx: HttpApiContext, p: RequestParams): unknown {
  const { store } = ctx
  const id = identity(p)
  const patch: Partial<Pick<StoredInstance, 'weight' | 'enabled' | 'metadata'>> = {}
  if (p.get('weight') !== undefined) patch.weight = parseWeight(p.get('weight'))
  if (p.get('enabled') !== undefined || p.get('enable') !== undefined) patch.enabled = p.bool('enabled', p.bool('enable', true))
  if (p.get('metadata') !== undefined) patch.metadata = parseMetadata(p.get('metadata'))
  const updated = store.update(id.namespaceId, id.name, id.ip, id.port, id.clusterName, patch)
  if (updated === undefined) throw new NacosHttpError(400, `instance not exist: ${id.ip}:${id.port}@${id.clusterName} in ${id.name}`)
  return 'ok'
}

export function detail (ctx: HttpApiContext, p: RequestParams): unknown {
  const { store } = ctx
  const id = identity(p)
  const instance = store.find(id.namespaceId, id.name, id.ip, id.port, id.clusterName)
  if (instance === undefined) throw new NacosHttpError(404, 'no matched ip found!')
  return {
    service: id.name,
    ip: instance.ip,
    port: instance.port,
    clusterName: instance.clusterName,
    weight: instance.weight,
    healthy: instance.healthy,
    instanceId: `${instance.ip}#${instance.port}#${instance.clusterName}#${id.name}`,
    metadata: instance.metadata
  }
}

export function list (ctx: HttpApiContext, p: RequestParams, req: IncomingMessage): unknown {
  const { options: o } = ctx
  const { name, groupName } = p.service()
  const namespaceId = p.namespaceId()
  const query: ServiceInfoQuery = { name, groupName, clusters: p.get('clusters') ?? '', healthyOnly: p.bool('healthyOnly', false) }
  const udpPort = p.int('udpPort', 0)
  const agent = agentOf(req)
  if (udpPort > 0 && udpPort < 65536 && canPush(agent)) {
    ctx.push.subscribe({
      namespaceId,
      name,
      groupName,
      clusters: query.clusters,
      address: pushAddress(p.get('clientIP'), peerAddress(req), o.pushTo),
      port: udpPort,
      agent,
      lastSeen: ctx.now()
    })
  }
  return buildServiceInfo(ctx.storage.get(namespaceId, name), query, settings(ctx))
}

export function beat (ctx: HttpApiContext, p: RequestParams): unknown {
  const { options: o, store } = ctx
  const { name, groupName } = p.service()
  const namespaceId = p.namespaceId()
  const raw = p.get('beat')
  let body: { ip?: unknown, port?: unknown, cluster?: unknown, weight?: unknown, metadata?: unknown, ephemeral?: unknown } | undefined
  if (raw !== undefined && raw !== '') {
    try { body = JSON.parse(raw) as typeof body } catch { throw new NacosHttpError(400, `Param 'beat' is not valid JSON: ${raw}`) }
  }
  const ip = typeof body?.ip === 'string' ? body.ip : p.required('ip')
  const port = typeof body?.port === 'number' ? body.port : p.int('port')
  const clusterName = checkClusterName((typeof body?.cluster === 'string' && body.cluster) || p.get('clusterName') || DEFAULT_CLUSTER)
  const answer = (code: number, instance?: StoredInstance, outcome = 'ok'): unknown => {
    const clientBeatInterval = instance === undefined ? o.clientBeatIntervalMs : instanceTimeouts(instance, o).beatIntervalMs
    ctx.emit('beat', { namespaceId, service: name, ip, port, clusterName, code, outcome, light: body === undefined })
    return { clientBeatInterval, code, lightBeatEnabled: true }
  }
  const instance = store.find(namespaceId, name, ip, port, clusterName)
  if (instance !== undefined) {
    store.beat(namespaceId, name, instance)
    return answer(RESPONSE_CODE.ok, instance)
  }
  // Unknown instance: a full beat re-registers it ("data compensation"), a light one cannot.
  if (body === undefined || !o.beatReregister) return answer(RESPONSE_CODE.resourceNotFound, undefined, 'not-found')
  const weight = typeof body.weight === 'number' && body.weight >= 0 && body.weight <= 10_000 ? body.weight : 1
  const metadata = typeof body.metadata === 'object' && body.metadata !== null ? parseMetadata(JSON.stringify(body.metadata)) : {}
  const registered = store.register(namespaceId, name, groupName, {
    ip, port, clusterName, weight, metadata, healthy: true, enabled: true, ephemeral: body.ephemeral !== false
  }, 'beat-register')
  return answer(RESPONSE_CODE.ok, registered, 'registered')
}

export function metrics (ctx: HttpApiContext, p: RequestParams): unknown {
  const { store } = ctx
  if (p.bool('onlyStatus', true)) return { status: 'UP' }
  const services = store.services()
  const instanceCount = services.reduce((n, s) => n + s.instances.size, 0)
  return {
    status: 'UP',
    serviceCount: services.length,
    instanceCount,
    subscribeCount: ctx.push.subscribers().length,
    responsibleInstanceCount: instanceCount,
    clientCount: 0,
    connectionBasedClientCount: 0,
    ephemeralIpPortClientCount: 0,
    persistentIpPortClientCount: 0,
    responsibleClientCount: 0,
    cpu: 0,
    load: 0,
    mem: 0
  }
}

export function serviceList (ctx: HttpApiContext, p: RequestParams): unknown {
  const { store } = ctx
  const namespaceId = p.namespaceId()
  const groupName = p.get('groupName') || 'DEFAULT_GROUP'
  const pageNo = Math.max(1, p.int('pageNo', 1))
  const pageSize = Math.max(1, p.int('pageSize', 10))
  const names = store.services(namespaceId).filter((s) => s.groupName === groupName).map((s) => s.name.slice(groupName.length + 2)).sort()
  return { count: names.length, doms: names.slice((pageNo - 1) * pageSize, pageNo * pageSize) }
}
