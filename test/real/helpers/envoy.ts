// Starts the real Envoy binary (installed by test/real/envoy/install.sh, cached outside the repo)
// with a static bootstrap laid out as the meshes lay it out: an INBOUND listener in front of the
// app, an OUTBOUND listener for the app's own calls, the admin on loopback (Istio) or on a Unix
// socket (Contour), and `--drain-time-s` / `--drain-strategy` on the command line. Every port is
// bound by Envoy itself (port 0) and read back from the admin; the process is stopped by its PID.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Agent, request } from 'undici'

const INSTALL = fileURLToPath(new URL('../envoy/install.sh', import.meta.url))

export type EnvoyLayout = 'istio' | 'contour'

export interface RealEnvoyOptions {
  /** The app behind the inbound listener, `http://127.0.0.1:<port>`. */
  upstream: string
  /** Where the outbound listener forwards (the app's own calls). Default: the upstream. */
  outbound?: string
  /**
   * 'istio': listener stats `0.0.0.0_15006` / `0.0.0.0_15001` (Istio's names), HCMs `inbound_0.0.0.0_8080` /
   * `outbound_0.0.0.0_80`; 'contour': HCMs `ingress_http` / `outbound_http`, listener stats `ingress` /
   * `egress`. Envoy names a listener's stats by its configured address, `127.0.0.1_0` for both
   * port-0 listeners, so each gets a stat_prefix. Default 'istio'.
   */
  layout?: EnvoyLayout
  /** --drain-time-s. Default 2 (Istio's 45 s scaled). */
  drainTimeS?: number
  /** --drain-strategy. Default 'immediate' (Istio's). */
  drainStrategy?: 'immediate' | 'gradual'
  /** Admin port on 127.0.0.1. Default 0; 15000 only where a tool insists on it (`pilot-agent request`). */
  adminPort?: number
  /** Admin on this Unix socket instead of 127.0.0.1:0 (Contour's /admin/admin.sock). */
  adminSocket?: string
  /** The app speaks h2c: the inbound cluster uses HTTP/2 upstream. Default false. */
  http2Upstream?: boolean
  /** The health-check filter on the inbound HCM, answering GET /healthz itself (pass_through_mode false). Default false. */
  healthCheckFilter?: boolean
  /** --concurrency. Default 2 (Istio's). */
  concurrency?: number
}

export interface RealEnvoy {
  pid: number
  /** http://127.0.0.1:<port> of the admin; with adminSocket, 'http://localhost' (use `adminSocket`). */
  adminUrl: string
  adminSocket: string | undefined
  inboundUrl: string
  inboundPort: number
  outboundUrl: string
  outboundPort: number
  /** Raw-stat address part of the inbound listener, e.g. '0.0.0.0_15006' or '127.0.0.1_41234'. */
  inboundStatAddress: string
  /** HCM stat prefix of the inbound listener. */
  inboundStatPrefix: string
  /** GET/POST on the admin (TCP or socket). */
  admin: (method: string, path: string) => Promise<{ status: number, headers: Record<string, string | string[] | undefined>, body: string }>
  /** Resolves with the exit code (or signal) once the process ended. */
  exited: Promise<number | string | null>
  /** stderr so far, for failure messages. */
  log: () => string
  /** SIGTERM by PID (SIGKILL after 5 s); resolves once gone. */
  stop: () => Promise<void>
}

let binary: string | undefined

/** The cached binary, installing it on first use (one install per machine). */
export function envoyBinary (): string {
  if (binary !== undefined) return binary
  const fromEnv = process.env.LAMEDUCK_ENVOY_BIN
  if (fromEnv !== undefined && existsSync(fromEnv)) return (binary = fromEnv)
  const out = execFileSync('bash', [INSTALL], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim().split('\n')
  binary = out[out.length - 1]!
  return binary
}

const running = new Set<ChildProcess>()
process.once('exit', () => { for (const c of running) if (c.pid !== undefined) try { process.kill(c.pid, 'SIGKILL') } catch {} })

export async function startRealEnvoy (options: RealEnvoyOptions): Promise<RealEnvoy> {
  const layout = options.layout ?? 'istio'
  const dir = mkdtempSync(join(tmpdir(), 'lameduck-envoy-'))
  const addrFile = join(dir, 'admin.addr')
  const inboundStatPrefix = layout === 'istio' ? 'inbound_0.0.0.0_8080' : 'ingress_http'
  const config = bootstrap(options, layout, inboundStatPrefix)
  writeFileSync(join(dir, 'envoy.json'), JSON.stringify(config, null, 2))
  const args = [
    '-c', join(dir, 'envoy.json'),
    '--disable-hot-restart',
    '--concurrency', String(options.concurrency ?? 2),
    '--drain-time-s', String(options.drainTimeS ?? 2),
    '--drain-strategy', options.drainStrategy ?? 'immediate',
    '--admin-address-path', addrFile,
    '-l', 'warning'
  ]
  const child = spawn(envoyBinary(), args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] })
  running.add(child)
  let stderr = ''
  child.stderr!.on('data', (c: Buffer) => { stderr = (stderr + c.toString('utf8')).slice(-20_000) })
  const exited = new Promise<number | string | null>((resolve) => child.once('exit', (code, signal) => { running.delete(child); resolve(code ?? signal) }))
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      try { process.kill(child.pid, 'SIGTERM') } catch {}
      const timer = setTimeout(() => { try { process.kill(child.pid!, 'SIGKILL') } catch {} }, 5_000)
      await exited
      clearTimeout(timer)
    }
    if (!dispatcher.closed) await dispatcher.close().catch(() => {})
    rmSync(dir, { recursive: true, force: true })
  }
  const dispatcher = new Agent(options.adminSocket !== undefined ? { connect: { socketPath: options.adminSocket } } : {})
  let adminUrl = 'http://localhost'
  const admin: RealEnvoy['admin'] = async (method, path) => {
    const res = await request(adminUrl + path, { method: method as 'GET', dispatcher })
    return { status: res.statusCode, headers: res.headers, body: await res.body.text() }
  }
  try {
    const deadline = Date.now() + 30_000
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`envoy exited (${child.exitCode ?? child.signalCode}):\n${stderr}`)
      if (Date.now() > deadline) throw new Error(`envoy did not come up within 30 s:\n${stderr}`)
      const ready = options.adminSocket !== undefined ? existsSync(options.adminSocket) : existsSync(addrFile) && readFileSync(addrFile, 'utf8').includes(':')
      if (ready) {
        if (options.adminSocket === undefined) adminUrl = `http://${readFileSync(addrFile, 'utf8').trim()}`
        const live = await admin('GET', '/ready').catch(() => null)
        if (live?.status === 200) break
      }
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    const ports = await listenerPorts(admin)
    const inboundPort = ports.get('virtualInbound')!
    const outboundPort = ports.get('virtualOutbound')!
    return {
      pid: child.pid!,
      adminUrl,
      adminSocket: options.adminSocket,
      inboundUrl: `http://127.0.0.1:${inboundPort}`,
      inboundPort,
      outboundUrl: `http://127.0.0.1:${outboundPort}`,
      outboundPort,
      inboundStatAddress: layout === 'istio' ? '0.0.0.0_15006' : 'ingress',
      inboundStatPrefix,
      admin,
      exited,
      log: () => stderr,
      stop
    }
  } catch (err) {
    await stop()
    throw err
  }
}

/** Bound ports by listener name, from `GET /listeners?format=json`. */
async function listenerPorts (admin: RealEnvoy['admin']): Promise<Map<string, number>> {
  const res = await admin('GET', '/listeners?format=json')
  const doc = JSON.parse(res.body) as { listener_statuses: Array<{ name: string, local_address: { socket_address: { port_value: number } } }> }
  return new Map(doc.listener_statuses.map((l) => [l.name, l.local_address.socket_address.port_value]))
}

function socketAddress (url: string): { socket_address: { address: string, port_value: number } } {
  const u = new URL(url)
  return { socket_address: { address: u.hostname, port_value: Number(u.port) } }
}

function cluster (name: string, url: string, http2: boolean): object {
  return {
    name,
    type: 'STATIC',
    connect_timeout: '1s',
    load_assignment: { cluster_name: name, endpoints: [{ lb_endpoints: [{ endpoint: { address: socketAddress(url) } }] }] },
    ...(http2
      ? {
          typed_extension_protocol_options: {
            'envoy.extensions.upstreams.http.v3.HttpProtocolOptions': {
              '@type': 'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
              explicit_http_config: { http2_protocol_options: {} }
            }
          }
        }
      : {})
  }
}

function listener (name: string, direction: 'INBOUND' | 'OUTBOUND', statPrefix: string, hcmPrefix: string, clusterName: string, healthCheck: boolean): object {
  const filters: object[] = []
  if (healthCheck) {
    filters.push({
      name: 'envoy.filters.http.health_check',
      typed_config: {
        '@type': 'type.googleapis.com/envoy.extensions.filters.http.health_check.v3.HealthCheck',
        pass_through_mode: false,
        headers: [{ name: ':path', string_match: { exact: '/healthz' } }]
      }
    })
  }
  filters.push({ name: 'envoy.filters.http.router', typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router' } })
  return {
    name,
    stat_prefix: statPrefix,
    traffic_direction: direction,
    address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
    filter_chains: [{
      filters: [{
        name: 'envoy.filters.network.http_connection_manager',
        typed_config: {
          '@type': 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
          stat_prefix: hcmPrefix,
          codec_type: 'AUTO',
          route_config: {
            name: `${name}_route`,
            virtual_hosts: [{
              name: 'all',
              domains: ['*'],
              routes: [{
                match: { prefix: '/' },
                // Istio's inbound route: retry only when no request byte went upstream.
                route: { cluster: clusterName, retry_policy: { retry_on: 'reset-before-request', num_retries: 2 } }
              }]
            }]
          },
          http_filters: filters
        }
      }]
    }]
  }
}

function bootstrap (o: RealEnvoyOptions, layout: EnvoyLayout, inboundPrefix: string): object {
  const istio = layout === 'istio'
  return {
    node: { id: 'lameduck-test', cluster: 'lameduck-test' },
    admin: {
      address: o.adminSocket !== undefined ? { pipe: { path: o.adminSocket } } : { socket_address: { address: '127.0.0.1', port_value: o.adminPort ?? 0 } }
    },
    static_resources: {
      listeners: [
        listener('virtualInbound', 'INBOUND', istio ? '0.0.0.0_15006' : 'ingress', inboundPrefix, 'inbound_app', o.healthCheckFilter ?? false),
        listener('virtualOutbound', 'OUTBOUND', istio ? '0.0.0.0_15001' : 'egress', istio ? 'outbound_0.0.0.0_80' : 'outbound_http', 'outbound_upstream', false)
      ],
      clusters: [
        cluster('inbound_app', o.upstream, o.http2Upstream ?? false),
        cluster('outbound_upstream', o.outbound ?? o.upstream, false)
      ]
    }
  }
}
