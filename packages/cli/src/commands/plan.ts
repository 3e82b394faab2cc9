import { InvalidOptionError, WINDOW_PARTS, WINDOW_PRESETS, isWindowPreset, type WindowParts, type WindowsInput } from '@lameduck/core'
import { EXIT, type Command, type CommandContext } from '../command.ts'
import { integerFlag, msFlag, parseFlags, stringFlag, UsageError, urlFlag } from '../args.ts'
import { computePlan } from '../plan.ts'
import { renderPlanYaml } from '../plan-yaml.ts'

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
  --sidecar istio           Istio sidecar: proxy settings and the istio-proxy preStop
  --sidecar native          Envoy as a native sidecar (initContainers, restartPolicy: Always)
  --sidecar-drain-timeout-ms N
                            the plugin's sidecar.drainTimeoutMs (default 30000)
  --envoy-admin URL         the plugin's sidecar.envoyAdmin (default
                            http://127.0.0.1:15000 for istio, :9901 for native)
  --container NAME          app container name in the patch (default app)
  --port N                  app port for the readiness probe (default 3000)
  --json                    print the plan as JSON instead
  -h, --help                show this help

Exit codes: 0 printed, 2 bad flags.

Examples:
  lameduck plan --windows eureka-ribbon
  lameduck plan --windows nacos --max-request-ms 5000 --sidecar istio
  lameduck plan --windows eureka-ribbon --balancer-refresh-ms 5000 --json
`

async function run (ctx: CommandContext): Promise<number> {
  const options: Record<string, { type: 'string' | 'boolean' }> = {
    windows: { type: 'string' },
    'max-request-ms': { type: 'string' },
    sidecar: { type: 'string' },
    'sidecar-drain-timeout-ms': { type: 'string' },
    'envoy-admin': { type: 'string' },
    container: { type: 'string' },
    port: { type: 'string' },
    json: { type: 'boolean' }
  }
  for (const flag of Object.values(PART_FLAGS)) options[flag] = { type: 'string' }
  const { values } = parseFlags(ctx.argv, options)

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
  const windows: WindowsInput = Object.keys(overrides).length === 0 ? preset! : { ...(preset ? { preset } : {}), ...overrides } as WindowsInput
  const sidecar = stringFlag(values, 'sidecar')
  if (sidecar !== undefined && sidecar !== 'istio' && sidecar !== 'native') throw new UsageError(`--sidecar must be 'istio' or 'native' (got '${sidecar}')`)
  const envoyAdmin = stringFlag(values, 'envoy-admin')
  if (envoyAdmin !== undefined) urlFlag('envoy-admin', envoyAdmin)
  if (envoyAdmin !== undefined && sidecar === undefined) throw new UsageError('--envoy-admin needs --sidecar istio or --sidecar native')
  const port = integerFlag(values, 'port', 'a port number')
  if (port !== undefined && (port < 1 || port > 65535)) throw new UsageError(`--port must be 1–65535 (got ${port})`)

  let plan
  try {
    plan = computePlan({
      windows,
      maxRequestMs: msFlag(values, 'max-request-ms'),
      sidecar: sidecar as 'istio' | 'native' | undefined,
      envoyAdmin,
      sidecarDrainTimeoutMs: msFlag(values, 'sidecar-drain-timeout-ms'),
      container: stringFlag(values, 'container'),
      port
    })
  } catch (err) {
    if (err instanceof InvalidOptionError) throw new UsageError(err.message)
    throw err
  }
  if (values.json === true) {
    ctx.stdout.write(JSON.stringify(plan, null, 2) + '\n')
  } else {
    ctx.stdout.write(renderPlanYaml(plan, ['lameduck plan', ...ctx.argv].join(' ')))
  }
  return EXIT.OK
}

export const plan: Command = { name: 'plan', summary: 'print the window, preStop, grace period and proxy settings as a YAML patch', help, run }
