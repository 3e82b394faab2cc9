import { lookup } from 'node:dns/promises'
import { isIP } from 'node:net'
import { networkInterfaces } from 'node:os'
import { gunzipSync } from 'node:zlib'
import type { Logger } from '@lameduck/core'
import type { NamingClientInternals } from './sdk-types.ts'

// The SDK's UDP push receiver binds every address and applies any `dom` packet from anyone:
// one forged datagram (the port is in every poll as `udpPort=`) rewrites a service's list, and
// a `dump` packet is answered to its sender with the whole service map (2.6.3 trips over its own
// getter before it sends it, a fixed SDK would not). This guard sits in front of the receiver:
// packets are handled only when they come from an address of a configured Nacos server, and
// `dump` is never answered. With push off, the receiver is closed and polls say udpPort=0, so
// the server keeps no UDP subscriber for this process at all.

export interface PushCounts {
  /** Packets from a server address, handed to the SDK. */
  accepted: number
  /** Packets from any other address, dropped unanswered. */
  refused: number
  /** `dump` requests, dropped unanswered whatever their source. */
  dumps: number
  /** The last refused source, for describe(). */
  lastRefusedFrom: string | null
}

interface Receiver {
  _handlePushMessage?: (msg: Buffer, rinfo: { address: string, port: number }) => void
  close?: () => Promise<void>
}

const RESOLVE_EVERY_MS = 30_000
const RESOLVE_MISS_MS = 1_000

function hostOf (entry: string): string {
  const m = /^\[([^\]]+)\](?::\d+)?$/.exec(entry) ?? /^([^:]+)(?::\d+)?$/.exec(entry)
  return m?.[1] ?? entry
}

function localAddresses (): string[] {
  const out: string[] = []
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) out.push(a.address)
  return out
}

function isLoopback (address: string): boolean {
  return address.startsWith('127.') || address === '::1' || address.startsWith('::ffff:127.')
}

/**
 * The addresses pushes may come from: each server's resolved addresses; and when a server is on
 * this host (loopback or a local interface), this host's own interface addresses too, since a
 * local server's push to this host's clientIP leaves from that address, not from 127.0.0.1.
 */
export async function pushSources (servers: readonly string[]): Promise<Set<string>> {
  const allowed = new Set<string>()
  const local = localAddresses()
  for (const entry of servers) {
    const host = hostOf(entry.trim())
    const resolved = isIP(host) !== 0 ? [host] : (await lookup(host, { all: true }).catch(() => [])).map((r) => r.address)
    for (const address of resolved) {
      allowed.add(address)
      if (isLoopback(address) || local.includes(address)) for (const own of local) allowed.add(own)
    }
  }
  for (const address of [...allowed]) if (isIP(address) === 4) allowed.add(`::ffff:${address}`)
  return allowed
}

export interface PushGuard {
  readonly counts: PushCounts
  /** Closes the receiver and makes polls say udpPort=0 (push off). */
  readonly pushOff: boolean
}

/**
 * Wraps the receiver's packet handler (an instance property, so a receiver socket the SDK
 * recreates after an error goes through it too). Returns undefined, with a warning, when the
 * SDK's internals look different from nacos-naming 2.6.3.
 */
export function guardPushes (internals: NamingClientInternals, servers: () => readonly string[], push: boolean, logger: Logger): PushGuard | undefined {
  const receiver = internals._hostReactor?._pushReceiver as Receiver | undefined
  const handle = receiver?._handlePushMessage
  if (receiver === undefined || typeof handle !== 'function') {
    logger.warn({ nacos: { workaround: 'push-guard' } }, 'nacos: cannot guard this nacos SDK version\'s UDP push receiver: pushes from any sender are applied')
    return undefined
  }
  const counts: PushCounts = { accepted: 0, refused: 0, dumps: 0, lastRefusedFrom: null }
  let allowed: Promise<Set<string>> | null = null
  let resolvedAt = 0
  let resolvedFor = ''
  const sources = (maxAgeMs = RESOLVE_EVERY_MS): Promise<Set<string>> => {
    const now = Date.now()
    const list = servers().filter((entry) => entry.trim() !== '')
    // A new list (the address server answered) is resolved at once; the same one again after maxAgeMs.
    if (allowed === null || list.join(',') !== resolvedFor || now - resolvedAt > maxAgeMs) {
      resolvedAt = now
      resolvedFor = list.join(',')
      allowed = pushSources(list)
    }
    return allowed
  }
  sources().catch(() => {})
  const original = handle.bind(receiver)
  // An unknown sender may be a server the endpoint named since, or a name that moved: resolve again,
  // at most once a second (a flood of forged packets costs one lookup a second).
  const known = async (address: string): Promise<boolean> => (await sources()).has(address) || (await sources(RESOLVE_MISS_MS)).has(address)
  receiver._handlePushMessage = (msg, rinfo) => {
    known(rinfo.address).then((ok) => {
      if (!ok) {
        counts.refused++
        counts.lastRefusedFrom = `${rinfo.address}:${rinfo.port}`
        if (counts.refused === 1 || counts.refused % 100 === 0) {
          logger.warn({ nacos: { from: counts.lastRefusedFrom, refused: counts.refused } }, `nacos: dropped a UDP push from ${counts.lastRefusedFrom}, which is not a configured Nacos server (${counts.refused} so far)`)
        }
        return
      }
      if (isDump(msg)) {
        counts.dumps++
        logger.warn({ nacos: { from: `${rinfo.address}:${rinfo.port}` } }, 'nacos: dropped a UDP "dump" request: the service map is never sent over UDP')
        return
      }
      counts.accepted++
      original(msg, rinfo)
    }, (err: unknown) => logger.warn({ err }, 'nacos: cannot check a UDP push sender'))
  }
  return { counts, pushOff: !push }
}

function isDump (msg: Buffer): boolean {
  // Decoded as the SDK decodes it (gzip when the magic bytes say so); what does not parse is left to it.
  try {
    const text = (msg.length > 1 && msg[0] === 0x1f && msg[1] === 0x8b ? gunzipSync(msg) : msg).toString('utf8')
    return (JSON.parse(text) as { type?: unknown }).type === 'dump'
  } catch {
    return false
  }
}

/** Push off: close the receiver once the client started (its readiness waits on the bind). */
export async function closeReceiver (internals: NamingClientInternals): Promise<void> {
  const receiver = internals._hostReactor?._pushReceiver as Receiver | undefined
  await receiver?.close?.()
}
