// An address that refuses connections, for "nothing listens there" tests, without
// the bind-then-release race (another test could take a released port).
//
// The port is the local end of a connection we keep open, bound explicitly
// (`localPort`) below the kernel's ephemeral range:
// - nothing listens on it, so a connect gets a RST: ECONNREFUSED, exactly what a
//   stopped app gives;
// - listen(0) and every connect's own source port come from the ephemeral range,
//   so no other test is ever handed it (only an explicit listen on that very
//   port could take it, and tests listen on 0);
// - a connect to it can never be given it as its own source port. A port in the
//   ephemeral range can, when a connection already holds it: the connect then
//   reaches itself (TCP self-connect) instead of being refused, about once in
//   tens of thousands of connects; seen as a lost request in a full-suite run.
// packages/test-utils/test/ports.test.ts checks each.
import { connect, createServer, type Server, type Socket } from 'node:net'
import { readFileSync } from 'node:fs'

export interface DeadPort {
  /** A port on 127.0.0.1 that refuses every connection while this is open. */
  port: number
  /** `http://127.0.0.1:<port>` plus `path`. */
  url(path?: string): string
  close(): Promise<void>
}

/** The kernel's ephemeral range (Linux), else the IANA one. */
export function ephemeralRange (): [number, number] {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number)
    if (Number.isInteger(low) && Number.isInteger(high)) return [low!, high!]
  } catch {}
  return [49152, 65535]
}

const TRIES = 100

export async function deadPort (): Promise<DeadPort> {
  const accepted: Socket[] = []
  const holder: Server = createServer((s) => { s.on('error', () => {}); accepted.push(s) })
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve))
  const target = (holder.address() as { port: number }).port
  // Below the ephemeral range (and above the well-known ports); a port in use is skipped.
  const [low] = ephemeralRange()
  const floor = 10_000
  const span = Math.max(1, low - floor)
  let socket: Socket | null = null
  for (let i = 0; i < TRIES && socket === null; i++) {
    const localPort = floor + Math.floor(Math.random() * span)
    const s = connect({ port: target, host: '127.0.0.1', localAddress: '127.0.0.1', localPort })
    const outcome = await new Promise<string>((resolve) => {
      s.once('connect', () => { resolve('ok') })
      s.once('error', (e: NodeJS.ErrnoException) => { resolve(e.code ?? 'error') })
    })
    if (outcome === 'ok') { s.on('error', () => {}); socket = s } else s.destroy()
  }
  if (socket === null) {
    await new Promise<void>((resolve) => holder.close(() => resolve()))
    throw new Error(`deadPort: no free port below ${low} after ${TRIES} tries`)
  }
  const held = socket
  const port = held.localPort!
  return {
    port,
    url: (path = '') => `http://127.0.0.1:${port}${path}`,
    async close () {
      held.destroy()
      for (const s of accepted) s.destroy()
      await new Promise<void>((resolve) => holder.close(() => resolve()))
    }
  }
}
