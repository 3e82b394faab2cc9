import { LameduckError } from '@lameduck/core'

/**
 * The Nacos server refuses the client protocol of the chosen transport: Nacos 3.2 and later turn
 * the 1.x client HTTP API (the `nacos` npm SDK's protocol) off by default and answer 410 Gone.
 * The message says what to do: the 3.x client open API (`transport: 'v3'`), or the server switch.
 */
export class NacosProtocolError extends LameduckError {
  /** The server that refused (host:port). */
  readonly server: string
  /** Its HTTP status (410 for a deprecated API). */
  readonly status: number
  /** The transport that was refused. */
  readonly transport: 'v1' | 'v3'
  constructor (server: string, status: number, transport: 'v1' | 'v3', detail: string) {
    const fix = transport === 'v1'
      ? "Use nacosRegistry({ transport: 'v3' }) (the 3.x client open API /nacos/v3/client/ns/instance: HTTP polling, no UDP push), " +
        'or set nacos.core.api.compatibility.client.enabled=true in the server\'s application.properties.'
      : "This server has no 3.x client open API (Nacos before 3.0): use transport: 'v1' (the default)."
    super('LAMEDUCK_ERR_NACOS_PROTOCOL', `the Nacos server ${server} refuses the ${transport === 'v1' ? '1.x client HTTP API the nacos npm SDK speaks' : '3.x client open API'} (HTTP ${status}${detail === '' ? '' : `: ${detail}`}). ${fix}`)
    this.name = 'NacosProtocolError'
    this.server = server
    this.status = status
    this.transport = transport
  }
}
