// Eureka servers that replicate to each other (a peer cluster, every server in every
// other's peer list), as eureka.client.service-url lists them on real servers.
import { count } from '@lameduck/core'
import type { EurekaServerOptions } from './options.ts'
import { startEureka, type EurekaServer } from './server.ts'

export interface EurekaClusterOptions extends Omit<EurekaServerOptions, 'peerUrls'> {
  /** Number of servers. Default 2. */
  peers?: number
}

export interface EurekaCluster {
  servers: EurekaServer[]
  /** Every server's `serviceUrl`, for eureka-js-client `serviceUrls.default`. */
  serviceUrls: string[]
  close(): Promise<void>
}

export async function startEurekaCluster (options: EurekaClusterOptions = {}): Promise<EurekaCluster> {
  const { peers: given, ...serverOptions } = options
  const peers = count('peers', given, 2, { min: 2 }) // one server is startEureka()
  const servers: EurekaServer[] = []
  try {
    for (let i = 0; i < peers; i++) {
      const port = serverOptions.port === undefined || serverOptions.port === 0 ? 0 : serverOptions.port + i
      servers.push(await startEureka({ ...serverOptions, port }))
    }
  } catch (err) {
    await Promise.all(servers.map((s) => s.close()))
    throw err
  }
  for (const server of servers) for (const peer of servers) if (peer !== server) server.addPeer(peer.url)
  return {
    servers,
    serviceUrls: servers.map((s) => s.serviceUrl),
    close: async () => { await Promise.all(servers.map((s) => s.close())) }
  }
}
