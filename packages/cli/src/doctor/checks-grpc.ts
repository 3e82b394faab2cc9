// gRPC containers (a @grpc/grpc-js server under attachGrpc): Kubernetes probes them
// natively (`grpc: { port, service }`, grpc.health.v1, GA in 1.27), not with an
// httpGet, which a gRPC server (HTTP/2 only) never answers with a 2xx.
import type { CheckCode } from './catalog.ts'
import type { Report } from './checks.ts'
import { isRecord } from './manifest.ts'
import type { Container } from './pod.ts'

/** Port names and appProtocols that mean gRPC (the Service/Istio conventions: `grpc`, `grpc-web`, `grpc-orders`). */
const GRPC_NAME = /^grpc(-|$)/i

interface GrpcFacts {
  /** The container's gRPC ports, by number and by name. */
  ports: Array<{ number: number | null, name: string | null }>
  /** A probe already uses the native gRPC probe. */
  grpcProbe: boolean
}

function grpcFacts (c: Container): GrpcFacts {
  const ports: GrpcFacts['ports'] = []
  for (const p of Array.isArray(c.value.ports) ? c.value.ports : []) {
    if (!isRecord(p)) continue
    const name = typeof p.name === 'string' ? p.name : null
    const protocol = typeof p.appProtocol === 'string' ? p.appProtocol : ''
    if ((name !== null && GRPC_NAME.test(name)) || GRPC_NAME.test(protocol)) ports.push({ number: typeof p.containerPort === 'number' ? p.containerPort : null, name })
  }
  const grpcProbe = ['readinessProbe', 'livenessProbe', 'startupProbe'].some((k) => isRecord(c.value[k]) && isRecord((c.value[k] as Record<string, unknown>).grpc))
  return { ports, grpcProbe }
}

/** A container that serves gRPC: a port named or declared gRPC, or a native gRPC probe. */
export function isGrpcContainer (c: Container): boolean {
  const f = grpcFacts(c)
  return f.ports.length > 0 || f.grpcProbe
}

/** The readinessProbe to suggest for a gRPC container (null for any other). */
export function grpcReadinessFix (c: Container): string | null {
  const f = grpcFacts(c)
  if (f.ports.length === 0 && !f.grpcProbe) return null
  const port = f.ports.find((p) => p.number !== null)?.number ?? 50051
  return `add readinessProbe: { grpc: { port: ${port} }, periodSeconds: 2, failureThreshold: 2 } (Kubernetes' gRPC probe calls grpc.health.v1.Health/Check, which attachGrpc() serves: SERVING only while serving, NOT_SERVING from the start of a drain)`
}

export function checkGrpc (c: Container, mark: (code: CheckCode) => void, report: Report): void {
  const f = grpcFacts(c)
  if (f.ports.length === 0) return
  mark('readiness-http-on-grpc')
  const probe = c.value.readinessProbe
  if (!isRecord(probe) || !isRecord(probe.httpGet)) return
  const target = probe.httpGet.port
  const hit = f.ports.find((p) => (typeof target === 'number' && p.number === target) || (typeof target === 'string' && (p.name === target || String(p.number) === target)))
  if (hit === undefined) return
  const shown = hit.name ?? String(hit.number)
  report('error', 'readiness-http-on-grpc', [...c.path, 'readinessProbe', 'httpGet'], {
    container: c.name,
    message: `container '${c.name}': the readinessProbe is an httpGet on port ${String(target)}, which serves gRPC (port ${shown}): kubelet sends an HTTP/1.1 GET that a gRPC server (HTTP/2 only) never answers with 2xx, so the pod never becomes ready — or, if that port also speaks HTTP/1.1, readiness does not follow the gRPC server's drain`,
    fix: `replace httpGet with grpc: { port: ${hit.number ?? 50051} } (Kubernetes 1.24+; grpc.health.v1, which attachGrpc() serves and turns NOT_SERVING from the start of a drain)`
  })
}
