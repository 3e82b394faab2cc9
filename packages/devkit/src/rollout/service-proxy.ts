// A Kubernetes Service as kube-proxy makes it: new connections go to a ready
// endpoint as the proxy last saw the endpoint list (which lags the pods by
// `lagMs`), and established connections stay where they are (conntrack).
import { createServer, connect, type Server, type Socket } from 'node:net'

export interface Endpoint { id: string, port: number }

export class ServiceProxy {
  readonly lagMs: number
  #visible: Endpoint[] = []
  #next = 0
  #server: Server
  #sockets = new Set<Socket>()
  #timers = new Set<NodeJS.Timeout>()
  port = 0
  /** Connections that found no endpoint, or whose endpoint refused. */
  refused = 0

  constructor (lagMs: number) {
    this.lagMs = lagMs
    this.#server = createServer((client) => this.#route(client))
  }

  async listen (): Promise<number> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve))
    this.port = (this.#server.address() as { port: number }).port
    return this.port
  }

  /** The endpoints controller published a new list; the proxy applies it after the lag. */
  publish (endpoints: Endpoint[]): void {
    const copy = endpoints.map((e) => ({ ...e }))
    const timer = setTimeout(() => { this.#timers.delete(timer); this.#visible = copy }, this.lagMs)
    this.#timers.add(timer)
  }

  get endpoints (): readonly Endpoint[] { return this.#visible }

  #route (client: Socket): void {
    this.#sockets.add(client)
    client.once('close', () => this.#sockets.delete(client))
    const list = this.#visible
    if (list.length === 0) { this.refused++; client.destroy(); return }
    const target = list[this.#next++ % list.length]!
    const upstream = connect(target.port, '127.0.0.1')
    this.#sockets.add(upstream)
    upstream.once('close', () => this.#sockets.delete(upstream))
    // With iptables DNAT the client's SYN reaches the dead pod and is refused;
    // here the client connection is already accepted, so it is reset instead.
    upstream.once('error', () => { this.refused++; client.destroy() })
    client.once('error', () => upstream.destroy())
    upstream.once('close', () => client.destroy())
    client.once('close', () => upstream.destroy())
    client.pipe(upstream)
    upstream.pipe(client)
  }

  async close (): Promise<void> {
    for (const t of this.#timers) clearTimeout(t)
    for (const s of this.#sockets) s.destroy()
    await new Promise<void>((resolve) => this.#server.close(() => resolve()))
  }
}
