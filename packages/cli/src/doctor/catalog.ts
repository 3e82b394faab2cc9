// Every check the doctor runs, by code: `doctor --json` lists the ones that
// applied to the input, and --help prints them all.
import type { Severity } from './checks.ts'

export const CHECKS = [
  { code: 'bad-annotation', severity: 'error', what: 'a lameduck.dev/* annotation or LAMEDUCK_* env that cannot be read' },
  { code: 'prestop-missing', severity: 'error', what: 'app container without a preStop hook' },
  { code: 'sleep-shorter-than-window', severity: 'error', what: 'a sleep preStop shorter than the window' },
  { code: 'prestop-http-loopback', severity: 'error', what: 'httpGet preStop to the loopback-only admin (kubelet calls the pod IP)' },
  { code: 'grace-too-short', severity: 'error', what: 'preStop + drain longer than terminationGracePeriodSeconds' },
  { code: 'readiness-missing', severity: 'error', what: 'app container without a readinessProbe' },
  { code: 'readiness-http-on-grpc', severity: 'error', what: 'httpGet readinessProbe on a gRPC port (use the native grpc probe, grpc.health.v1)' },
  { code: 'readiness-slow', severity: 'warning', what: 'periodSeconds × failureThreshold longer than the window' },
  { code: 'sigterm-not-forwarded', severity: 'error', what: 'npm/yarn/pnpm or sh -c without exec as PID 1 while the app relies on SIGTERM' },
  { code: 'min-ready-short', severity: 'warning', what: 'minReadySeconds shorter than the app\'s warmup' },
  { code: 'sidecar-stops-first', severity: 'error', what: 'an Envoy/istio-proxy that can stop before the app' },
  { code: 'istio-hold-off', severity: 'warning', what: 'classic Istio sidecar without holdApplicationUntilProxyStarts' },
  { code: 'istio-proxy-native-merge', severity: 'warning', what: 'istio-proxy declared in containers where Istio injects a native sidecar' },
  { code: 'istio-idle-stats', severity: 'warning', what: 'Istio sidecar without the request gauges the idle rule reads' },
  { code: 'ambient-sidecar', severity: 'error', what: 'ambient pod with a sidecar drain configured' },
  { code: 'ambient-ztunnel-lag', severity: 'error', what: 'ambient pod whose window does not cover ztunnel\'s lag' },
  { code: 'readiness-topology', severity: 'warning', what: 'readinessWhileDraining \'fail\' with a single replica (Local: see etp-local)' },
  { code: 'pdb-missing', severity: 'warning', what: 'replicated workload without a PodDisruptionBudget' },
  { code: 'pdb-too-tight', severity: 'warning', what: 'PodDisruptionBudget that allows no eviction' },
  { code: 'lb-deregistration-delay', severity: 'warning', what: 'cloud LB target deregistration/draining longer than the window' },
  { code: 'route-no-endpoint-lag', severity: 'warning', what: 'Gateway API route to pods whose window has no endpoint term' },
  { code: 'envoy-gateway-shutdown', severity: 'warning', what: 'Envoy Gateway drainTimeout/minDrainDuration against the window and longest request' },
  { code: 'warmup-mismatch', severity: 'warning', what: 'a balancer\'s slow start (DestinationRule, BackendTrafficPolicy) that differs from the app\'s warmup' },
  { code: 'etp-local', severity: 'warning', what: 'Service with externalTrafficPolicy: Local and readiness \'fail\' (trade-off)' },
  { code: 'nginx-pod-upstream', severity: 'warning', what: 'ingress-nginx Ingress without service-upstream (trade-off)' },
  { code: 'ingress-nginx-retired', severity: 'info', what: 'ingress-nginx is retired (March 2026)' }
] as const satisfies ReadonlyArray<{ code: string, severity: Severity, what: string }>

export type CheckCode = typeof CHECKS[number]['code']
