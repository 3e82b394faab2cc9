import { InvalidOptionError, WINDOW_PARTS, WINDOW_PRESETS, isWindowPreset, type WindowParts, type WindowsInput } from '@lameduck/core'
import { EXIT, type Command, type CommandContext } from '../command.ts'
import { integerFlag, msFlag, parseFlags, stringFlag, UsageError, urlFlag } from '../args.ts'
import { computePlan, type EnvoyDrainStrategy } from '../plan.ts'
import { renderPlanYaml } from '../plan-yaml.ts'
import { renderResources } from '../plan-resources.ts'
import { renderAccess } from '../plan-kubernetes.ts'
import { parseIstioVersion, versionAtLeast, ISTIO_NATIVE_DEFAULT } from '../doctor/sidecar.ts'

const PART_FLAGS: Record<keyof WindowParts, string> = {
  serverCacheMs: 'server-cache-ms',
  replicationMs: 'replication-ms',
  clientFetchMs: 'client-fetch-ms',
  balancerRefreshMs: 'balancer-refresh-ms',
  endpointLagMs: 'endpoint-lag-ms',
  marginMs: 'margin-ms'
}
const presets = Object.keys(WINDOW_PRESETS).join(', ')

const help = `Usage: lameduck plan --windows PRESET [overrides] [--max-request-ms N]
                     [--sidecar istio|native] [--json]

Prints the propagation window with its breakdown and everything that follows
from it: the @lameduck/fastify options, the preStop hook, the readiness probe,
terminationGracePeriodSeconds and, with --sidecar istio, the proxy settings:
as a YAML patch for the pod template with a comment on every number.
Istio settings: holdApplicationUntilProxyStarts, EXIT_ON_ZERO_ACTIVE_CONNECTIONS,
MINIMUM_DRAIN_DURATION, terminationDrainDuration, and a \`lameduck wait-drained\`
preStop for istio-proxy.
The numbers come from the same calculator the plugin uses.

Options:
  --windows PRESET          ${presets}
  --server-cache-ms N       override: registry server cache
  --replication-ms N        override: registry replication between servers
  --client-fetch-ms N       override: consumer registry fetch interval
  --balancer-refresh-ms N   override: consumer balancer refresh
  --endpoint-lag-ms N       override: Kubernetes endpoint propagation
  --margin-ms N             override: safety margin
  --max-request-ms N        longest request the app serves (default 30000)
  --telemetry-flush-ms N    the app's openTelemetry.flushTimeoutMs: its SDK flush after the
                            close, added to shutdownTimeoutMs and the grace period
  --sidecar istio           Istio sidecar: proxy settings and the istio-proxy preStop
  --sidecar native          Envoy as a native sidecar (initContainers, restartPolicy: Always)
  --sidecar-drain-timeout-ms N
                            the plugin's sidecar.drainTimeoutMs (default 30000)
  --envoy-admin URL         the plugin's sidecar.envoyAdmin (default
                            http://127.0.0.1:15000 for istio, :9901 for native)
  --envoy-drain-strategy S  immediate (Istio's, and after /healthcheck/fail) or gradual
                            (Envoy's default): when connections are told to close
  --envoy-drain-time-ms N   Envoy's --drain-time-s in ms, for gradual (default 600000)
  --idle-quiet-ms N         the sidecar's idleQuietMs (default 2000): the sidecar phase
                            is max(longest request, told-to-close) + idleQuietMs + 2 polls,
                            at most --sidecar-drain-timeout-ms
  --istio-version X.Y       with --sidecar istio: native injection from 1.27 (default),
                            classic before (adds the istio-proxy wait-drained preStop)
  --ambient                 Istio ambient (ztunnel): no sidecar drain; the preStop stays
  --kubernetes-version X.Y  the cluster's version (default 1.34): decides the preStop form
  --no-cli                  the image has no lameduck CLI: a preStop sleep for the window
                            (the sleep action from 1.34), then the app's SIGTERM path drains
  --warmup-ms N             the app's warmup: minReadySeconds, and with --resources the
                            Istio, Envoy Gateway and APISIX slow start from the same number
  --resources               also print the PodDisruptionBudget and the balancers' warmup
  --name NAME               the workload's name and app label in --resources (default orders)
  --observed-window         @lameduck/kubernetes observedWindow(): the endpoint term ends when
                            the pod's own endpoint leaves its EndpointSlice's ready set; adds
                            POD_NAME/POD_IP and a Role (endpointslices: get, list, watch)
  --data-plane-lag-ms N     with --observed-window: counted after the endpoint flips, for
                            kube-proxy and ingress sync (default 5000)
  --readiness-gate          @lameduck/kubernetes readinessGate(): readinessGates on the pod
                            (lameduck.dev/registered, set once the registry confirmed) and a
                            Role (pods/status: patch)
  --gate-warmup-fraction F  with --readiness-gate: set it once this share (0-1) of the warmup passed
  --service-account NAME    the ServiceAccount the Role binds (default NAME-lameduck)
  --container NAME          app container name in the patch (default app)
  --port N                  app port for the readiness probe (default 3000; 50051 with --grpc)
  --grpc                    the app is a gRPC server (@lameduck/grpc attachGrpc): a native gRPC
                            readiness probe (grpc.health.v1, Kubernetes 1.24+) instead of httpGet
  --json                    print the plan as JSON instead
  -h, --help                show this help

Exit codes: 0 printed, 2 bad flags.

Examples:
  lameduck plan --windows eureka-ribbon
  lameduck plan --windows nacos --max-request-ms 5000 --sidecar istio
  lameduck plan --windows eureka-ribbon --balancer-refresh-ms 5000 --json
`

const FLAGS: Record<string, { type: 'string' | 'boolean' }> = {
  windows: { type: 'string' },
  'max-request-ms': { type: 'string' },
  'telemetry-flush-ms': { type: 'string' },
  sidecar: { type: 'string' },
  'sidecar-drain-timeout-ms': { type: 'string' },
  'envoy-admin': { type: 'string' },
  container: { type: 'string' },
  port: { type: 'string' },
  grpc: { type: 'boolean' },
  'envoy-drain-strategy': { type: 'string' },
  'envoy-drain-time-ms': { type: 'string' },
  'idle-quiet-ms': { type: 'string' },
  'istio-version': { type: 'string' },
  ambient: { type: 'boolean' },
  'kubernetes-version': { type: 'string' },
  'no-cli': { type: 'boolean' },
  'warmup-ms': { type: 'string' },
  resources: { type: 'boolean' },
  name: { type: 'string' },
  'observed-window': { type: 'boolean' },
  'data-plane-lag-ms': { type: 'string' },
  'readiness-gate': { type: 'boolean' },
  'gate-warmup-fraction': { type: 'string' },
  'service-account': { type: 'string' },
  json: { type: 'boolean' },
  ...Object.fromEntries(Object.values(PART_FLAGS).map((flag) => [flag, { type: 'string' as const }]))
}

type Values = ReturnType<typeof parseFlags>['values']

/** --windows and the part flags: a preset, parts, or a preset with parts overridden. */
function windowsFrom (values: Values): WindowsInput {
  const preset = stringFlag(values, 'windows')
  if (preset !== undefined && !isWindowPreset(preset)) throw new UsageError(`--windows: unknown preset '${preset}'; use one of ${presets}`)
  const overrides: Partial<WindowParts> = {}
  for (const part of WINDOW_PARTS) {
    const ms = msFlag(values, PART_FLAGS[part])
    if (ms !== undefined) overrides[part] = ms
  }
  if (preset === undefined && Object.keys(overrides).length === 0) {
    throw new UsageError(`--windows is required: one of ${presets} (or give the parts, e.g. --client-fetch-ms 30000)`)
  }
  return Object.keys(overrides).length === 0 ? preset! : { ...(preset ? { preset } : {}), ...overrides } as WindowsInput
}

/** Every other flag, checked once, as computePlan's input. */
function planInput (values: Values): Parameters<typeof computePlan>[0] {
  const windows = windowsFrom(values)
  const sidecar = stringFlag(values, 'sidecar')
  if (sidecar !== undefined && sidecar !== 'istio' && sidecar !== 'native') throw new UsageError(`--sidecar must be 'istio' or 'native' (got '${sidecar}')`)
  const envoyAdmin = stringFlag(values, 'envoy-admin')
  if (envoyAdmin !== undefined) urlFlag('envoy-admin', envoyAdmin)
  if (envoyAdmin !== undefined && sidecar === undefined) throw new UsageError('--envoy-admin needs --sidecar istio or --sidecar native')
  const port = integerFlag(values, 'port', 'a port number')
  if (port !== undefined && (port < 1 || port > 65535)) throw new UsageError(`--port must be 1–65535 (got ${port})`)
  const strategy = stringFlag(values, 'envoy-drain-strategy')
  if (strategy !== undefined && strategy !== 'immediate' && strategy !== 'gradual') throw new UsageError(`--envoy-drain-strategy must be 'immediate' or 'gradual' (got '${strategy}')`)
  const rawIstio = stringFlag(values, 'istio-version')
  const istioVersion = rawIstio === undefined ? undefined : parseIstioVersion(rawIstio)
  if (rawIstio !== undefined && istioVersion === undefined) throw new UsageError(`--istio-version must look like 1.27 (got '${rawIstio}')`)
  if (rawIstio !== undefined && sidecar !== 'istio') throw new UsageError('--istio-version needs --sidecar istio')
  const ambient = values.ambient === true
  if (ambient && sidecar !== undefined) throw new UsageError('--ambient has no sidecar to drain: leave out --sidecar (ztunnel carries the traffic)')
  const rawK8s = stringFlag(values, 'kubernetes-version')
  const k8s = rawK8s === undefined ? undefined : /^v?1\.(\d+)(\.\d+)?$/.exec(rawK8s.trim())
  if (rawK8s !== undefined && (k8s === null || k8s === undefined)) throw new UsageError(`--kubernetes-version must look like 1.34 (got '${rawK8s}')`)
  const name = stringFlag(values, 'name')
  if (name !== undefined && !/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(name)) throw new UsageError(`--name must be a DNS label, e.g. orders (got '${name}')`)
  return {
    windows,
    maxRequestMs: msFlag(values, 'max-request-ms'),
    telemetryFlushMs: msFlag(values, 'telemetry-flush-ms'),
    sidecar: sidecar as 'istio' | 'native' | undefined,
    envoyAdmin,
    sidecarDrainTimeoutMs: msFlag(values, 'sidecar-drain-timeout-ms'),
    container: stringFlag(values, 'container'),
    port,
    grpc: values.grpc === true,
    envoyDrainStrategy: strategy as EnvoyDrainStrategy | undefined,
    envoyDrainTimeMs: msFlag(values, 'envoy-drain-time-ms'),
    idleQuietMs: msFlag(values, 'idle-quiet-ms'),
    istioMode: istioVersion === undefined || versionAtLeast(istioVersion, ISTIO_NATIVE_DEFAULT) ? 'native' : 'classic',
    ambient,
    kubernetesMinor: k8s ? Number(k8s[1]) : undefined,
    noCli: values['no-cli'] === true,
    warmupMs: msFlag(values, 'warmup-ms'),
    name,
    ...kubernetesFlags(values)
  }
}

/** --observed-window, --readiness-gate and what goes with them. */
function kubernetesFlags (values: Values): Pick<Parameters<typeof computePlan>[0], 'observedWindow' | 'readinessGate' | 'serviceAccount'> {
  const observed = values['observed-window'] === true
  const gate = values['readiness-gate'] === true
  const dataPlaneLagMs = msFlag(values, 'data-plane-lag-ms')
  if (dataPlaneLagMs !== undefined && !observed) throw new UsageError('--data-plane-lag-ms needs --observed-window')
  const rawFraction = stringFlag(values, 'gate-warmup-fraction')
  const warmupFraction = rawFraction === undefined ? undefined : Number(rawFraction)
  if (rawFraction !== undefined && !gate) throw new UsageError('--gate-warmup-fraction needs --readiness-gate')
  if (warmupFraction !== undefined && !(rawFraction!.trim() !== '' && warmupFraction >= 0 && warmupFraction <= 1)) throw new UsageError(`--gate-warmup-fraction must be a number from 0 to 1, e.g. 0.5 (got '${rawFraction!}')`)
  const serviceAccount = stringFlag(values, 'service-account')
  if (serviceAccount !== undefined && !(observed || gate)) throw new UsageError('--service-account needs --observed-window or --readiness-gate')
  if (serviceAccount !== undefined && !/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(serviceAccount)) throw new UsageError(`--service-account must be a Kubernetes name, e.g. orders-lameduck (got '${serviceAccount}')`)
  return {
    observedWindow: observed ? { dataPlaneLagMs } : undefined,
    readinessGate: gate ? { warmupFraction } : undefined,
    serviceAccount
  }
}

async function run (ctx: CommandContext): Promise<number> {
  const { values } = parseFlags(ctx.argv, FLAGS)
  const input = planInput(values)
  let plan
  try {
    plan = computePlan(input)
  } catch (err) {
    if (err instanceof InvalidOptionError) throw new UsageError(err.message)
    throw err
  }
  if (values.json === true) {
    ctx.stdout.write(JSON.stringify(plan, null, 2) + '\n')
  } else {
    ctx.stdout.write(renderPlanYaml(plan, ['lameduck plan', ...ctx.argv].join(' ')))
    if (values.resources === true) ctx.stdout.write(renderResources(plan))
    if (plan.kubernetes !== null) ctx.stdout.write(renderAccess(plan.kubernetes))
  }
  return EXIT.OK
}

export const plan: Command = { name: 'plan', summary: 'print the window, preStop, grace period and proxy settings as a YAML patch', help, run }
