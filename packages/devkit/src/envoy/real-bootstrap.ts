// The static bootstrap the devkit hands the real Envoy binary: laid out as the meshes lay it
// out — an INBOUND listener in front of the app, an OUTBOUND one for the app's own calls, the
// admin on loopback or on a Unix socket — with every port 0 (Envoy binds them; the admin says
// which). Layout 'istio' names the stats as an Istio sidecar does, 'contour' as Contour's Envoy.

export type RealEnvoyLayout = 'istio' | 'contour'

export interface RealBootstrapOptions {
  /** The app behind the inbound listener, `http://127.0.0.1:<port>`. */
  upstream: string
  /** Where the outbound listener forwards (the app's own calls). Default: the upstream. */
  outbound?: string
  /**
   * 'istio': listener stats `0.0.0.0_15006` / `0.0.0.0_15001`, HCMs `inbound_0.0.0.0_8080` /
   * `outbound_0.0.0.0_80`; 'contour': HCMs `ingress_http` / `outbound_http`, listener stats
   * `ingress` / `egress`. Envoy names a listener's stats by its configured address
   * (`127.0.0.1_0` for both port-0 listeners), so each gets a stat_prefix. Default 'istio'.
   */
  layout?: RealEnvoyLayout
  /** Admin port on 127.0.0.1. Default 0. */
  adminPort?: number
  /** Admin on this Unix socket instead (Contour's /admin/admin.sock). */
  adminSocket?: string
  /** The app speaks h2c: the inbound cluster uses HTTP/2 upstream. Default false. */
  http2Upstream?: boolean
  /**
   * The inbound route's `retry_on` (2 retries). Default 'reset-before-request', Istio's inbound route:
   * a stream the app refused by GOAWAY (REFUSED_STREAM, its request sent) is not retried by it;
   * 'reset-before-request,refused-stream' retries those too.
   */
  inboundRetryOn?: string
  /** The health-check filter on the inbound HCM, answering GET /healthz itself. Default false. */
  healthCheckFilter?: boolean
  /**
   * Istio's stats matcher (its bootstrap keeps only a few stats; `downstream_cx_active` only with
   * EXIT_ON_ZERO_ACTIVE_CONNECTIONS; more by the pod's `sidecar.istio.io/statsInclusionSuffixes`).
   * Default false: every stat, as plain Envoy.
   */
  istioStats?: false | { exitOnZeroActiveConnections: boolean, statsInclusionSuffixes?: readonly string[] }
}

/** The inbound HCM's stat prefix of a layout. */
export function inboundStatPrefix (layout: RealEnvoyLayout): string {
  return layout === 'istio' ? 'inbound_0.0.0.0_8080' : 'ingress_http'
}

export function realEnvoyBootstrap (o: RealBootstrapOptions): object {
  const layout = o.layout ?? 'istio'
  const istio = layout === 'istio'
  return {
    node: { id: 'lameduck-devkit', cluster: 'lameduck-devkit' },
    admin: {
      address: o.adminSocket !== undefined ? { pipe: { path: o.adminSocket } } : { socket_address: { address: '127.0.0.1', port_value: o.adminPort ?? 0 } }
    },
    ...(o.istioStats ? { stats_config: { stats_matcher: istioMatcher(o.istioStats) } } : {}),
    static_resources: {
      listeners: [
        listener('virtualInbound', 'INBOUND', istio ? '0.0.0.0_15006' : 'ingress', inboundStatPrefix(layout), 'inbound_app', o.healthCheckFilter ?? false, o.inboundRetryOn ?? ISTIO_RETRY_ON),
        listener('virtualOutbound', 'OUTBOUND', istio ? '0.0.0.0_15001' : 'egress', istio ? 'outbound_0.0.0.0_80' : 'outbound_http', 'outbound_upstream', false, ISTIO_RETRY_ON)
      ],
      clusters: [
        cluster('inbound_app', o.upstream, o.http2Upstream ?? false),
        cluster('outbound_upstream', o.outbound ?? o.upstream, false)
      ]
    }
  }
}

/** Istio's bootstrap inclusion list (tools/packaging/common/envoy_bootstrap.json), the same as the stand-in's istioStatsMatcher. */
function istioMatcher (s: { exitOnZeroActiveConnections: boolean, statsInclusionSuffixes?: readonly string[] }): object {
  const prefixes = ['cluster_manager', 'listener_manager', 'server', 'cluster.xds-grpc', 'wasm']
  const suffixes = ['rbac.allowed', 'rbac.denied', 'shadow_allowed', 'shadow_denied', ...(s.exitOnZeroActiveConnections ? ['downstream_cx_active'] : []), ...(s.statsInclusionSuffixes ?? [])]
  return { inclusion_list: { patterns: [...prefixes.map((prefix) => ({ prefix })), ...suffixes.map((suffix) => ({ suffix }))] } }
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

function httpFilters (healthCheck: boolean): object[] {
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
  return filters
}

/** Istio's inbound route: retry only when no request byte went upstream. */
const ISTIO_RETRY_ON = 'reset-before-request'

function listener (name: string, direction: 'INBOUND' | 'OUTBOUND', statPrefix: string, hcmPrefix: string, clusterName: string, healthCheck: boolean, retryOn: string): object {
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
                route: { cluster: clusterName, retry_policy: { retry_on: retryOn, num_retries: 2 } }
              }]
            }]
          },
          http_filters: httpFilters(healthCheck)
        }
      }]
    }]
  }
}
