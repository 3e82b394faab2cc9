import { isIPv4, isIPv6 } from 'node:net'

/** `host:port`, with brackets around an IPv6 literal (and nothing else). */
export function hostPort (host: string, port: number): string {
  return isIPv6(host) ? `[${host}]:${port}` : `${host}:${port}`
}

// RFC 1123 labels, plus '_' (Docker and Compose hostnames use it and URL parsing accepts it).
const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/i
// A last label that URL parsing would read as an IPv4 number ('10.0.0.256', '1.2.3', '0x7f'): not a name.
const NUMERIC = /^(?:\d+|0x[0-9a-f]*)$/i

/**
 * Why `host` cannot be routed to, or null when it can: an IPv4 address, an IPv6
 * literal (bare or in brackets, without a zone id: URL has no syntax for one) or a DNS
 * name. Registries hand over what providers registered, so anything else is possible:
 * a port (`10.0.0.5:8080`), userinfo (`evil.com:80@127.0.0.1`), spaces, a path.
 */
export function hostProblem (host: unknown): string | null {
  if (typeof host !== 'string' || host === '') return 'no host'
  if (host.length > 255) return 'host longer than 255 characters'
  if (isIPv4(host)) return null
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host
  if (bare.includes('%')) return 'IPv6 zone ids are not supported (URLs cannot carry one)'
  if (isIPv6(bare)) return null
  if (bare !== host || host.includes(':')) return 'a port or an invalid IPv6 address in the host (register host and port separately)'
  const name = host.endsWith('.') ? host.slice(0, -1) : host
  if (name.length > 253) return 'DNS name longer than 253 characters'
  const labels = name.split('.')
  for (const label of labels) if (!LABEL.test(label)) return 'not an IP address or a DNS name (letters, digits, "-" and "_" in dot-separated labels of 1-63)'
  if (NUMERIC.test(labels[labels.length - 1]!)) return 'not a valid IPv4 address, and a DNS name cannot end in a number'
  return null
}

/** The host as it goes into `host:port`: IPv6 literals without brackets (hostPort adds them). */
export function bareHost (host: string): string {
  return host.startsWith('[') ? host.slice(1, -1) : host
}
