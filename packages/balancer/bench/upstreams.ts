// Child process: N keep-alive node:http upstreams on 127.0.0.1. Prints their ports
// as one JSON line, then serves until its stdin closes (the parent exited).
import { createServer } from 'node:http'
import type { Server } from 'node:http'
import { once } from 'node:events'

const count = Number(process.argv[2] ?? 3)
const body = Buffer.from('{"ok":true}')
const ports: number[] = []
const servers: Server[] = []
for (let i = 0; i < count; i++) {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length })
    res.end(body)
  })
  server.keepAliveTimeout = 60_000
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  ports.push((server.address() as { port: number }).port)
  servers.push(server)
}
process.stdout.write(JSON.stringify(ports) + '\n')
process.stdin.resume()
process.stdin.on('end', () => { for (const s of servers) { s.closeAllConnections(); s.close() } })
