// A TCP proxy between a discovery and the API server (TLS passes through untouched), that can
// freeze the connections open now (no byte goes on in either direction: a watch that hangs
// without closing), cut them, or hold new ones back.
import { createServer, connect, type Socket, type AddressInfo } from 'node:net'

export interface FaultProxy {
  /** https://127.0.0.1:<port>: where the discovery connects. */
  url: string
  /** Connections accepted so far. */
  readonly accepted: number
  /** Stops every byte on the connections open now; new connections pass. */
  freeze: () => number
  /** Destroys every connection open now. */
  cut: () => number
  /** New connections wait (accepted, not forwarded) until release(). */
  hold: () => void
  release: () => void
  close: () => Promise<void>
}

export async function faultProxy (upstreamPort: number): Promise<FaultProxy> {
  const open = new Set<{ client: Socket, upstream: Socket | undefined }>()
  const all = new Set<Socket>()
  let held: Array<() => void> | undefined
  let accepted = 0
  const server = createServer((client) => {
    accepted++
    const pair: { client: Socket, upstream: Socket | undefined } = { client, upstream: undefined }
    open.add(pair)
    all.add(client)
    client.on('close', () => { open.delete(pair); all.delete(client); pair.upstream?.destroy() })
    client.on('error', () => {})
    client.pause()
    const go = (): void => {
      if (client.destroyed) return
      const upstream = pair.upstream = connect(upstreamPort, '127.0.0.1')
      all.add(upstream)
      upstream.on('close', () => all.delete(upstream))
      upstream.on('error', () => client.destroy())
      upstream.on('close', () => client.destroy())
      client.pipe(upstream)
      upstream.pipe(client)
      client.resume()
    }
    if (held !== undefined) held.push(go)
    else go()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  return {
    url: `https://127.0.0.1:${port}`,
    get accepted () { return accepted },
    freeze: () => {
      for (const { client, upstream } of open) {
        client.unpipe(); upstream?.unpipe(); client.pause(); upstream?.pause()
      }
      const n = open.size
      open.clear() // frozen ones stay open but are no longer ours to cut
      return n
    },
    cut: () => {
      const n = open.size
      for (const { client, upstream } of open) { client.destroy(); upstream?.destroy() }
      return n
    },
    hold: () => { held ??= [] },
    release: () => { const h = held ?? []; held = undefined; for (const go of h) go() },
    close: async () => {
      for (const socket of all) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}
