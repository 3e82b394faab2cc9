import { networkInterfaces } from 'node:os'

/** POD_IP (set from the downward API in Kubernetes), else the first non-internal IPv4, else loopback. */
export function defaultHost (env: NodeJS.ProcessEnv = process.env): string {
  if (env.POD_IP) return env.POD_IP
  for (const list of Object.values(networkInterfaces())) {
    for (const addr of list ?? []) if (addr.family === 'IPv4' && !addr.internal) return addr.address
  }
  return '127.0.0.1'
}
