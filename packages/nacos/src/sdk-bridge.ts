import { NacosNamingClient } from 'nacos'
import { redactedErrorCopy, redactError, redactText, type Logger } from '@lameduck/core'
import type { NamingClient, NamingClientConstructor, NamingClientInternals, NamingClientOptions, ServiceInfoData } from './sdk-types.ts'
import { closeReceiver, guardPushes, type PushCounts } from './push-guard.ts'

// Owns the real nacos naming client and the hooks that work around its traps.
// All hooks are instance-level (never prototypes), so other clients in the
// process are untouched, and each one is skipped with a warning if the SDK's
// internals look different from nacos-naming 2.6.3.

export type UpdateSource = 'push' | 'poll'

export interface BeatAnswer { code: number | undefined, clientBeatInterval: number | undefined }

export interface SdkBridge {
  client: NamingClient
  /** True when this adapter sends the beats (the SDK's own loop is stopped). */
  readonly ownBeats: boolean
  /** True when every ServiceInfo the SDK receives (push and poll) is seen here. */
  readonly observing: boolean
  ready(): Promise<void>
  sendBeat(groupedService: string, beat: Record<string, unknown>): Promise<BeatAnswer>
  onServiceInfo(listener: (data: ServiceInfoData, source: UpdateSource) => void): void
  udpPort(): number | undefined
  /** Counts of the UDP push guard (undefined when the SDK's receiver could not be guarded). */
  pushes(): PushCounts | undefined
  close(): Promise<void>
}

export interface BridgeSettings {
  /** false: no UDP push receiver, polls say udpPort=0 (the server keeps no UDP subscriber). */
  push: boolean
  /** The configured servers (host:port), whose addresses alone may push; undefined: the endpoint's list. */
  servers: readonly string[] | undefined
}

const BEAT_API = '/nacos/v1/ns/instance/beat'

type Listener = (data: ServiceInfoData, source: UpdateSource) => void

export function createSdkBridge (options: NamingClientOptions, logger: Logger, settings: BridgeSettings): SdkBridge {
  const Client = NacosNamingClient as unknown as NamingClientConstructor
  const client = new Client(options)
  const internals = client as unknown as NamingClientInternals
  redactRequests(internals)
  const reqAPI = takeOverBeats(internals, logger)
  const listeners: Listener[] = []
  const servers = (): readonly string[] => settings.servers ?? internals._serverProxy?.serversFromEndpoint ?? []
  const guard = guardPushes(internals, servers, settings.push, logger)
  const observing = observeServiceInfo(internals, listeners, logger, settings.push)
  // Push off: the receiver must bind before the client is ready (the SDK waits for it); close it right after.
  const started = settings.push ? client.ready() : client.ready().then(() => closeReceiver(internals))
  routeErrors(client, internals, logger)
  const hostReactor = internals._hostReactor
  const proxy = internals._serverProxy
  let closing: Promise<void> | null = null
  return {
    client,
    ownBeats: reqAPI !== undefined,
    observing,
    ready: () => started,
    sendBeat: (groupedService, beat) => sendBeat(reqAPI!, groupedService, beat),
    onServiceInfo (listener) { listeners.push(listener) },
    udpPort: () => settings.push ? hostReactor?._pushReceiver?.udpPort : 0,
    pushes: () => guard?.counts === undefined ? undefined : { ...guard.counts },
    close () {
      closing ??= (async () => {
        listeners.length = 0
        await client.close()
        // The client never closes its proxy, whose endpoint-refresh loop (endpoint
        // mode only) would otherwise run forever.
        await proxy?.close?.()
      })()
      return closing
    }
  }
}

// 0. Every HTTP call of the SDK goes through _reqAPI; its errors name the URL and
// may carry the credentials in the query. Redact them where they leave the SDK, so
// registration errors, /status problems and logs downstream are clean.
function redactRequests (internals: NamingClientInternals): void {
  const serverProxy = internals._serverProxy
  if (serverProxy === undefined || typeof serverProxy._reqAPI !== 'function') return
  const raw = serverProxy._reqAPI.bind(serverProxy)
  serverProxy._reqAPI = async (...args: Parameters<typeof raw>) => {
    try {
      return await raw(...args)
    } catch (err) {
      throw redactError(err)
    }
  }
}

type ReqAPI = NonNullable<NonNullable<NamingClientInternals['_serverProxy']>['_reqAPI']>

// 1. The SDK's beat loop sleeps 10 s before its first beat, ignores the
// answer's code (20404 never leads to a re-registration) and its pending
// sleep keeps the process alive after close(). Stop it right now, before its
// first sleep starts (interval 0, so the loop ends on the next tick), and
// beat from here instead. Returns the request function to beat with, or
// undefined when the SDK keeps beating.
function takeOverBeats (internals: NamingClientInternals, logger: Logger): ReqAPI | undefined {
  const beatReactor = internals._beatReactor
  const serverProxy = internals._serverProxy
  const reqAPI = serverProxy?._reqAPI?.bind(serverProxy)
  if (beatReactor !== undefined && typeof beatReactor.close === 'function' && typeof beatReactor._clientBeatInterval === 'number' && reqAPI !== undefined) {
    beatReactor._clientBeatInterval = 0
    beatReactor.close().catch(() => {})
    return reqAPI
  }
  logger.warn({ nacos: { workaround: 'beats' } }, 'nacos: this nacos SDK version has no stoppable beat loop; using its beats (20404 answers will not re-register, the first beat comes ~10 s late)')
  return undefined
}

async function sendBeat (reqAPI: ReqAPI, groupedService: string, beat: Record<string, unknown>): Promise<BeatAnswer> {
  const body = await reqAPI(BEAT_API, { beat: JSON.stringify(beat), serviceName: groupedService }, 'PUT')
  let answer: { code?: unknown, clientBeatInterval?: unknown } = {}
  try { answer = JSON.parse(body) as typeof answer } catch {
    // Some docs show `ok`; a real server answers JSON. Treat anything else as "no news".
  }
  return {
    code: typeof answer.code === 'number' ? answer.code : undefined,
    clientBeatInterval: Number(answer.clientBeatInterval) > 0 ? Number(answer.clientBeatInterval) : undefined
  }
}

// 2. Every ServiceInfo the SDK receives goes through processServiceJSON
// (pushes, first fetch, polls), except polls right after a push (refreshOnly
// discards them) -- those pass through queryList. Seeing both lets discovery
// apply empty host lists, which the SDK drops (the last instance never goes away).
// True when both are hooked.
function observeServiceInfo (internals: NamingClientInternals, listeners: Listener[], logger: Logger, push: boolean): boolean {
  const deliver = (json: string, source: UpdateSource): void => {
    let data: unknown
    try { data = JSON.parse(json) } catch { return }
    if (typeof data !== 'object' || data === null) return
    for (const fn of listeners) {
      try { fn(data as ServiceInfoData, source) } catch (err) { logger.error({ err: err instanceof Error ? redactedErrorCopy(err) : redactText(String(err)) }, 'nacos: a discovery listener threw') }
    }
  }
  const hostReactor = internals._hostReactor
  const proxy = internals._serverProxy
  if (hostReactor === undefined || typeof hostReactor.processServiceJSON !== 'function' || proxy === undefined || typeof proxy.queryList !== 'function') {
    logger.warn({ nacos: { workaround: 'empty-list' } }, 'nacos: cannot observe this nacos SDK version\'s updates; discovery relies on its listener (an emptied service keeps its last instance)')
    return false
  }
  const processJson = hostReactor.processServiceJSON.bind(hostReactor)
  const queryList = proxy.queryList.bind(proxy)
  let lastPollBody: string | undefined
  proxy.queryList = async (serviceName, clusters, udpPort, healthyOnly) => {
    // udpPort=0: the server adds no UDP subscriber (push off).
    const body = await queryList(serviceName, clusters, push ? udpPort : 0, healthyOnly)
    if (typeof body === 'string' && body !== '') {
      deliver(body, 'poll')
      lastPollBody = body
    }
    return body
  }
  hostReactor.processServiceJSON = (json: string) => {
    // The body a poll just returned comes back here: already delivered.
    if (json === lastPollBody) lastPollBody = undefined
    else deliver(json, 'push')
    return processJson(json)
  }
  return true
}

// 3. Poll and UDP errors are emitted on internal emitters and would go to
// console.error; route them into the logger.
function routeErrors (client: NamingClient, internals: NamingClientInternals, logger: Logger): void {
  const onError = (where: string) => (err: Error): void => {
    const safe = redactedErrorCopy(err)
    logger.warn({ err: safe, nacos: { where } }, `nacos sdk: ${where}: ${safe.message}`)
  }
  client.on('error', onError('client'))
  internals._hostReactor?.on?.('error', onError('polling'))
  internals._hostReactor?._pushReceiver?.on?.('error', onError('push receiver'))
}
