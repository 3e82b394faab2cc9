import { readFile } from 'node:fs/promises'
import { WINDOW_PRESETS, oneOf } from '@lameduck/core'
import { EXIT, type Command, type CommandContext } from '../command.ts'
import { checkFlag, msFlag, parseFlags, stringFlag, UsageError } from '../args.ts'
import { checkObjects } from '../doctor/checks.ts'
import { loadManifests, ManifestError, type ManifestObject } from '../doctor/manifest.ts'
import { renderText, summarize } from '../doctor/report.ts'
import { SIDECAR_FLAGS, type SidecarFlag } from '../doctor/sidecar.ts'
import { windowsFlag } from '../doctor/windows.ts'

const help = `Usage: lameduck doctor FILE.yaml... | - [--windows PRESET] [--max-request-ms N]
                      [--sidecar istio|native|none] [--strict] [--json]

Checks Deployments, StatefulSets, DaemonSets and Pods (multi-document YAML and
kind: List) for what loses requests in a rolling deploy, and names the line:

  error    prestop-missing            app container without a preStop hook
  error    grace-too-short            preStop + window longer than terminationGracePeriodSeconds
  error    sleep-shorter-than-window  a 'sleep N' preStop shorter than the window
  error    readiness-missing          app container without a readinessProbe
  warning  readiness-slow             periodSeconds × failureThreshold longer than the window
  error    sidecar-stops-first        an Envoy/istio-proxy container that can stop before the app
  warning  istio-hold-off             Istio sidecar without holdApplicationUntilProxyStarts
  warning  etp-local                  Service with externalTrafficPolicy: Local (trade-off)
  warning  nginx-pod-upstream         ingress-nginx Ingress without service-upstream (trade-off)
  error    bad-annotation             a lameduck.dev/* annotation that cannot be read

The window a pod is checked against: --windows, else the pod template's (or the
workload's) annotation lameduck.dev/windows (a preset, or JSON parts such as
{"preset":"nacos","marginMs":2000}), else env LAMEDUCK_WINDOWS of the app
container, else 'kubernetes'. The longest request: --max-request-ms, else the
annotation lameduck.dev/max-request-ms, else the plugin's default maxRequestMs
(30000). The grace period needed is the plugin's shutdown budget, the same
formula as \`lameduck plan\`: window + sidecar drain + longest request + 5 s to
close (+ 5 s for Istio's proxy drain), plus a 5 s margin before SIGKILL.
The sidecar: --sidecar, else Istio injection (the pod's sidecar.istio.io/inject
or istio.io/rev label, or its Namespace's istio-injection=enabled or
istio.io/rev label when the input holds the Namespace), else the proxy
containers the pod declares. The app containers: the annotation
lameduck.dev/container (comma-separated names), else the containers with ports
that are not proxies.

Options:
  --windows PRESET     check every pod against this window (${Object.keys(WINDOW_PRESETS).join(', ')})
  --max-request-ms N   longest request, added to the window for the grace period
                       (default: the annotation, else 30000)
  --sidecar KIND       istio (injected istio-proxy), native (Envoy as a native
                       sidecar), none: overrides what the manifest says
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
    strict: { type: 'boolean' },
    json: { type: 'boolean' }
  }, true)
  if (positionals.length === 0) throw new UsageError('give the manifest to check: lameduck doctor FILE.yaml (or - for stdin)')
  const rawWindows = stringFlag(values, 'windows')
  const window = rawWindows === undefined ? undefined : checkFlag(() => windowsFlag(rawWindows))
  const maxRequestMs = msFlag(values, 'max-request-ms')
  const rawSidecar = stringFlag(values, 'sidecar')
  const sidecar = rawSidecar === undefined ? undefined : checkFlag(() => oneOf<SidecarFlag>('--sidecar', rawSidecar, SIDECAR_FLAGS, 'none'))

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

  const { findings, checked, workloads } = checkObjects(objects, { window, maxRequestMs, sidecar })
  const files = positionals.map((f) => (f === '-' ? '<stdin>' : f))
  const result = summarize(files, checked, findings, values.strict === true)
  if (values.json === true) ctx.stdout.write(JSON.stringify(result, null, 2) + '\n')
  else ctx.stdout.write(renderText(result))
  if (workloads === 0) {
    // A Service or an Ingress alone says nothing about how pods stop: a wrong file, or a chart rendered without its workloads.
    ctx.stderr.write(`lameduck doctor: no workload in ${files.join(', ')}: found ${checked.length === 0 ? 'nothing it checks' : checked.map((c) => c.object).join(', ')}. Give the Deployment, StatefulSet, DaemonSet or Pod (with its Service and Ingress, if any), e.g. helm template ./chart | lameduck doctor -\n`)
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
