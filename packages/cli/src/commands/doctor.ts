import { readFile } from 'node:fs/promises'
import { WINDOW_PRESETS, oneOf } from '@lameduck/core'
import { EXIT, type Command, type CommandContext } from '../command.ts'
import { checkFlag, msFlag, parseFlags, stringFlag, UsageError } from '../args.ts'
import { checkObjects } from '../doctor/checks.ts'
import { loadManifests, ManifestError, type ManifestObject } from '../doctor/manifest.ts'
import { renderText, summarize } from '../doctor/report.ts'
import { parseIstioVersion, SIDECAR_FLAGS, type SidecarFlag } from '../doctor/sidecar.ts'
import { CHECKS } from '../doctor/catalog.ts'
import { windowsFlag } from '../doctor/windows.ts'

const help = `Usage: lameduck doctor FILE.yaml... | - [--windows PRESET] [--max-request-ms N]
                      [--sidecar istio|native|none] [--istio-version X.Y]
                      [--strict] [--json]

Checks Deployments, StatefulSets, DaemonSets and Pods (multi-document YAML and
kind: List) for what loses requests in a rolling deploy, and names the line:

${CHECKS.map((c) => `  ${c.severity.padEnd(8)} ${c.code.padEnd(26)} ${c.what}`).join('\n')}

Gateway API routes, Envoy Gateway (EnvoyProxy, BackendTrafficPolicy), Istio
DestinationRules, PodDisruptionBudgets, HPAs and GKE BackendConfigs are read
for the workloads they reach; other kinds and CRDs are listed as skipped.

The window a pod is checked against: --windows, else the pod template's (or the
workload's) annotation lameduck.dev/windows (a preset, or JSON parts such as
{"preset":"nacos","marginMs":2000}), else env LAMEDUCK_WINDOWS of the app
container, else 'kubernetes'. The longest request: --max-request-ms, else the
annotation lameduck.dev/max-request-ms, else the plugin's default maxRequestMs
(30000). The grace period needed is the plugin's shutdown budget, the same
formula as \`lameduck plan\`: window + sidecar phase (the idle rule:
max(longest request, told-to-close) + idleQuietMs 2 s + 2 polls, at most
drainTimeoutMs 30 s) + longest request + 5 s to close (+ 5 s for Istio's proxy
drain), plus a 5 s margin before SIGKILL.
The sidecar: --sidecar, else Istio injection (the pod's sidecar.istio.io/inject
or istio.io/rev label, or its Namespace's istio-injection=enabled or
istio.io/rev label when the input holds the Namespace), else the proxy
containers the pod declares. Istio: native sidecars (stopped after the app)
with annotation sidecar.istio.io/nativeSidecar: "true", or from Istio 1.27 on
(--istio-version, else the manifest's proxyv2 image tag or an istio.io/rev
label such as 1-27); ambient with label istio.io/dataplane-mode: ambient on
the pod or its Namespace. The app's warmup: annotation lameduck.dev/warmup-ms;
its readinessWhileDraining: annotation lameduck.dev/readiness-while-draining
or env LAMEDUCK_READINESS_WHILE_DRAINING ('fail', the default, or 'serve').
The app containers: the annotation
lameduck.dev/container (comma-separated names), else the containers with ports
that are not proxies.

Options:
  --windows PRESET     check every pod against this window (${Object.keys(WINDOW_PRESETS).join(', ')})
  --max-request-ms N   longest request, added to the window for the grace period
                       (default: the annotation, else 30000)
  --sidecar KIND       istio (injected istio-proxy), native (Envoy as a native
                       sidecar), none: overrides what the manifest says
  --istio-version X.Y  the mesh's Istio (native sidecars by default from 1.27)
  --strict             warnings fail too (exit 1)
  --json               print the result as JSON
  -h, --help           show this help

Exit codes: 0 no error, 1 errors (traffic would be lost; with --strict also
warnings), 2 bad flags, unreadable file, invalid YAML, or no workload in the
input (nothing with a pod template was checked).

Examples:
  lameduck doctor deploy.yaml
  helm template ./chart | lameduck doctor - --windows eureka-ribbon
  kubectl get deploy orders -o yaml | lameduck doctor -
`

async function run (ctx: CommandContext): Promise<number> {
  const { values, positionals } = parseFlags(ctx.argv, {
    windows: { type: 'string' },
    'max-request-ms': { type: 'string' },
    sidecar: { type: 'string' },
    'istio-version': { type: 'string' },
    strict: { type: 'boolean' },
    json: { type: 'boolean' }
  }, true)
  if (positionals.length === 0) throw new UsageError('give the manifest to check: lameduck doctor FILE.yaml (or - for stdin)')
  const rawWindows = stringFlag(values, 'windows')
  const window = rawWindows === undefined ? undefined : checkFlag(() => windowsFlag(rawWindows))
  const maxRequestMs = msFlag(values, 'max-request-ms')
  const rawSidecar = stringFlag(values, 'sidecar')
  const sidecar = rawSidecar === undefined ? undefined : checkFlag(() => oneOf<SidecarFlag>('--sidecar', rawSidecar, SIDECAR_FLAGS, 'none'))

  const rawIstio = stringFlag(values, 'istio-version')
  const istioVersion = rawIstio === undefined ? undefined : parseIstioVersion(rawIstio)
  if (rawIstio !== undefined && istioVersion === undefined) throw new UsageError(`--istio-version must look like 1.27 (got '${rawIstio}')`)

  const objects: ManifestObject[] = []
  for (const file of positionals) {
    const name = file === '-' ? '<stdin>' : file
    let text: string
    try {
      text = file === '-' ? await readStdin(ctx) : await readFile(file, 'utf8')
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      ctx.stderr.write(`lameduck doctor: cannot read ${name}: ${code === 'ENOENT' ? 'no such file' : (err as Error).message}\n`)
      return EXIT.USAGE
    }
    try {
      objects.push(...loadManifests(text, name))
    } catch (err) {
      if (!(err instanceof ManifestError)) throw err
      ctx.stderr.write(`lameduck doctor: ${err.message}\n`)
      return EXIT.USAGE
    }
  }

  const { findings, checked, workloads, checks } = checkObjects(objects, { window, maxRequestMs, sidecar, istioVersion })
  const files = positionals.map((f) => (f === '-' ? '<stdin>' : f))
  const result = summarize(files, checked, findings, values.strict === true, checks)
  if (values.json === true) ctx.stdout.write(JSON.stringify(result, null, 2) + '\n')
  else ctx.stdout.write(renderText(result))
  if (workloads === 0) {
    // A Service or an Ingress alone says nothing about how pods stop: a wrong file, or a chart rendered without its workloads.
    ctx.stderr.write(`lameduck doctor: no workload in ${files.join(', ')}: found ${checked.every((c) => c.note !== undefined || !/^(Service|Ingress)\//.test(c.object)) ? 'nothing it checks' : checked.filter((c) => c.note === undefined).map((c) => c.object).join(', ')}. Give the Deployment, StatefulSet, DaemonSet or Pod (with its Service and Ingress, if any), e.g. helm template ./chart | lameduck doctor -\n`)
    return EXIT.USAGE
  }
  return result.ok ? EXIT.OK : EXIT.FAILED
}

async function readStdin (ctx: CommandContext): Promise<string> {
  const stdin = ctx.stdin
  if (stdin === undefined) throw new UsageError('no standard input here: pass a file name instead of -')
  const chunks: Buffer[] = []
  for await (const chunk of stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

export const doctor: Command = { name: 'doctor', summary: 'check a manifest: preStop vs window vs grace period, probes, sidecar order', help, run }
