import { redactText } from '@lameduck/core'
import { NacosProtocolError } from './errors.ts'

// Asks each configured server, once at startup, whether it serves the transport's client API.
// Nacos 3.2+ answers the 1.x API with 410 Gone (ApiCompatibilityFilter, when
// nacos.core.api.compatibility.client.enabled is false); a server before 3.0 has no v3 client API.
// Only those answers are refusals: a server that asks for credentials is left to the calls
// themselves (and their retries). Resolves true when some server answered at all: when none did
// (all down at start), the caller asks again next time rather than trusting the silence.

const PROBE = {
  // A read whose refusal names the client API's own alternative (metrics would name an admin one).
  v1: '/nacos/v1/ns/instance/list?serviceName=lameduck-protocol-probe',
  v3: '/nacos/v3/client/ns/instance/list?serviceName=lameduck-protocol-probe'
} as const

/** The server's reason: Spring's error JSON carries Nacos's own Result JSON as its `message`. */
function detail (body: string): string {
  let text = body
  for (let depth = 0; depth < 2; depth++) {
    try {
      const parsed = JSON.parse(text) as { message?: unknown }
      if (typeof parsed.message !== 'string') break
      text = parsed.message
    } catch { break }
  }
  text = redactText(text.replace(/\s+/g, ' ').trim())
  return text.length > 300 ? `${text.slice(0, 300)}\u2026` : text
}

function refused (transport: 'v1' | 'v3', status: number): boolean {
  return transport === 'v1' ? status === 410 : status === 404 || status === 410 || status === 501
}

export async function checkProtocol (servers: readonly string[], transport: 'v1' | 'v3', ssl: boolean, timeoutMs: number): Promise<boolean> {
  const answers = await Promise.all(servers.map(async (server) => {
    const hostPort = /:\d+$/.test(server) && !/^\[[^\]]+\]$/.test(server) ? server : `${server}:8848`
    try {
      const res = await fetch(`${ssl ? 'https' : 'http'}://${hostPort}${PROBE[transport]}`, { signal: AbortSignal.timeout(timeoutMs) })
      const body = await res.text()
      return refused(transport, res.status) ? new NacosProtocolError(server, res.status, transport, detail(body)) : 'served'
    } catch {
      return 'silent'
    }
  }))
  const refusal = answers.find((a) => a instanceof NacosProtocolError)
  if (refusal !== undefined) throw refusal
  return answers.includes('served')
}
