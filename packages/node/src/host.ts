import { networkInterfaces } from 'node:os'
import { net } from './builtins.ts'

/** POD_IP (set from the downward API in Kubernetes), else the first non-internal IPv4, else loopback. */
export function defaultHost (env: NodeJS.ProcessEnv = process.env): string {
  if (env.POD_IP) return env.POD_IP
  for (const list of Object.values(networkInterfaces())) {
    for (const addr of list ?? []) if (addr.family === 'IPv4' && !addr.internal) return addr.address
  }
  return '127.0.0.1'
}

export function isLoopback (host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '::ffff:127.0.0.1' || /^127\./.test(host)
}

const WILDCARDS = new Set(['0.0.0.0', '::', '::0', ''])

/**
 * Why consumers could not reach `advertised` when the server listens on
 * `listen`, or null when they can (as far as addresses tell: a wildcard bind
 * reaches every interface; a DNS name is taken on trust). Catches the app bound
 * to 127.0.0.1 (or one specific IP) while the registry hands out another.
 */
export function unreachableAdvertised (listen: string, advertised: string): string | null {
  const l = listen.replace(/^::ffff:/, '')
  const a = advertised.replace(/^\[|\]$/g, '')
  if (WILDCARDS.has(l) || net().isIP(a) === 0) return null
  if (isLoopback(l)) return isLoopback(a) ? null : `the server listens on loopback (${listen}) only, so other machines cannot reach ${advertised}. Listen on '0.0.0.0' (or the pod IP), or advertise a loopback host`
  if (l !== a) return `the server listens on ${listen} only, not on ${advertised}. Listen on '0.0.0.0' or on ${advertised}, or set the host option to ${listen}`
  return null
}
