// A Nacos cluster of local nodes: each node serves the v1 API on its own port and
// passes every change made on it (register, deregister, beats, health, expiry) to the
// other nodes after the distro sync delay, a fixed 1 s on a real server
// (DistroConstants.DEFAULT_DATA_SYNC_DELAY_MILLISECONDS). A node checks only the beats
// of instances written to it; the others' copies follow their owner's changes. The SDK,
// given every node in `serverList`, reads and writes a random node per request.
import { count as checkCount, duration } from '@lameduck/core'
import type { DistroOp } from './naming-store.ts'
import type { NacosServerOptions } from './options.ts'
import { startNacosNode, type NacosNode, type NacosServer } from './server.ts'

export interface NacosClusterOptions extends NacosServerOptions {
  /** Number of nodes. Default 2. */
  nodes?: number
  /** Delay before a change reaches the other nodes. A fixed 1000 ms on a real cluster: do not scale it. Default 1000. */
  distroSyncDelayMs?: number
}

export interface NacosCluster {
  nodes: NacosServer[]
  /** Every node, comma-separated: the SDK's `serverList`. */
  serverList: string
  /** Distro changes sent to the other nodes and not yet applied there. */
  readonly pendingSync: number
  close(): Promise<void>
}

export async function startNacosCluster (options: NacosClusterOptions = {}): Promise<NacosCluster> {
  const { nodes: given, distroSyncDelayMs: syncDelay, ...serverOptions } = options
  const count = checkCount('nodes', given, 2, { min: 2 }) // one node is startNacos()
  const distroSyncDelayMs = duration('distroSyncDelayMs', syncDelay, 1_000)
  const members: NacosNode[] = []
  const timers = new Set<NodeJS.Timeout>()
  const sync = (from: number) => (op: DistroOp): void => {
    members.forEach((peer, i) => {
      if (i === from) return
      const timer = setTimeout(() => { timers.delete(timer); peer.apply(op) }, distroSyncDelayMs)
      timer.unref()
      timers.add(timer)
    })
  }
  try {
    for (let i = 0; i < count; i++) {
      const port = serverOptions.port === undefined || serverOptions.port === 0 ? 0 : serverOptions.port + i
      members.push(await startNacosNode({ ...serverOptions, port }, sync(i)))
    }
  } catch (err) {
    await Promise.all(members.map((m) => m.server.close()))
    throw err
  }
  const nodes = members.map((m) => m.server)
  return {
    nodes,
    serverList: nodes.map((n) => n.serverList).join(','),
    get pendingSync () { return timers.size },
    async close () {
      for (const t of timers) clearTimeout(t)
      timers.clear()
      await Promise.all(nodes.map((n) => n.close()))
    }
  }
}
