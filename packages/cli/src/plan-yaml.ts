// Renders a Plan as a YAML patch for a workload's pod template, with a comment on
// every number saying where it comes from. Hand-written text (not a YAML dump)
// so the comments sit exactly where a reader needs them.
import { WINDOW_PARTS } from '@lameduck/core'
import { formatSeconds } from './args.ts'
import { accessEnv, accessHeader, accessPodSpec } from './plan-kubernetes.ts'
import { CLOSE_SLACK_MS, ISTIO_MINIMUM_DRAIN_S, KILL_MARGIN_S, ZTUNNEL_LAG_MS, type Plan } from './plan.ts'

const q = (s: string): string => JSON.stringify(s)

type Line = (s?: string) => void
const sec = formatSeconds

export function renderPlanYaml (plan: Plan, commandLine: string): string {
  const out: string[] = []
  const line: Line = (s = '') => { out.push(s) }
  header(plan, line, commandLine)
  metadata(plan, line)
  podSpec(plan, line)
  appContainer(plan, line)
  istioProxy(plan, line)
  return out.join('\n') + '\n'
}

/** Where the numbers come from, and the plugin options that go with them. */
function header (plan: Plan, line: Line, commandLine: string): void {
  const w = plan.window
  line(`# ${commandLine}`)
  line('#')
  line(`# Propagation window: ${sec(w.totalMs)}, how long consumers may still route to an`)
  line(`# instance after it deregistered (preset '${w.preset}'):`)
  if (w.breakdown.length === 0) line('#   nothing to wait for')
  const width = Math.max(...w.breakdown.map((b) => b.why.length), 0)
  for (const b of w.breakdown) line(`#   ${sec(b.ms).padStart(7)}  ${b.why.padEnd(width)}  ${b.part}`)
  line('#')
  line('# @lameduck/fastify options:')
  line(`#   windows: ${jsWindows(plan.plugin.windows)},`)
  line(`#   maxRequestMs: ${plan.maxRequestMs},`)
  if (plan.plugin.sidecar) line(`#   sidecar: { envoyAdmin: '${plan.plugin.sidecar.envoyAdmin}', drainTimeoutMs: ${plan.plugin.sidecar.drainTimeoutMs}, idleQuietMs: ${plan.plugin.sidecar.idleQuietMs} },`)
  if (plan.warmup) line(`#   warmup: ${plan.warmup.ms},`)
  if (plan.plugin.openTelemetry) line(`#   openTelemetry: { flush: () => sdk.shutdown(), flushTimeoutMs: ${plan.plugin.openTelemetry.flushTimeoutMs} },`)
  line(`#   shutdownTimeoutMs: ${plan.shutdownTimeoutMs},  // ${shutdownWhy(plan)}`)
  line('#')
  if (plan.kubernetes !== null) accessHeader(plan.kubernetes, plan.window.parts.endpointLagMs, line)
  sidecarPhaseLines(plan, line)
  if (plan.ambient) {
    line('# Istio ambient: no sidecar to drain (no sidecar option); ztunnel learns of the pod\'s')
    line(`# deletion late (~${sec(ZTUNNEL_LAG_MS)}, istio/istio#58514): the window's endpoint term covers it, so`)
    line('# keep the preStop: it holds the app up while ztunnel and the Services catch up.')
    line('#')
  }
  keepAlive(plan, line)
  line('#')
  line('# Patch for a Deployment, StatefulSet or DaemonSet: merge into spec.template')
  line('# (e.g. kubectl patch deployment NAME --type strategic --patch-file plan.yaml).')
}

/** The server setting the drain relies on: idle keep-alive connections must not outlive the window. */
/** The sidecar phase under @lameduck/envoy's idle rule, term by term. */
function sidecarPhaseLines (plan: Plan, line: Line): void {
  const p = plan.sidecarPhase
  if (p === null) return
  line(`# Sidecar phase: ${sec(p.ms)} = max(${sec(plan.maxRequestMs)} longest request, ${sec(p.toldToCloseMs)} until every connection`)
  line(`# is told to close (${p.strategy === 'immediate' ? 'drain strategy immediate' : 'gradual: Envoy\'s drain time'})) + ${sec(p.idleQuietMs)} idleQuietMs + 2 × ${sec(p.checkIntervalMs)} polls${p.bounded ? `, bounded by drainTimeoutMs ${sec(p.drainTimeoutMs)}` : ''}:`)
  line('# the drain step ends once no request is in flight and none arrived for idleQuietMs.')
  if (p.strategy === 'gradual' && p.bounded) {
    const immediate = plan.maxRequestMs + p.idleQuietMs + 2 * p.checkIntervalMs
    if (immediate < p.drainTimeoutMs) line('# Run Envoy with --drain-strategy immediate (as Istio does) and pass --envoy-drain-strategy immediate:')
    if (immediate < p.drainTimeoutMs) line(`# the phase is then ${sec(immediate)}.`)
  }
  line('#')
}

function keepAlive (plan: Plan, line: Line): void {
  const max = plan.maxKeepAliveTimeoutMs
  if (max === null) {
    line('# The window is under 1 s, shorter than any Keep-Alive timeout a server can advertise:')
    line('# idle keep-alive connections outlive it and are closed at exit (a request can cross the close).')
    return
  }
  line(`# Server: keepAliveTimeout at most ${max} (Fastify's default is 72000, Node's 5000), so clients`)
  line('# drop idle keep-alive connections inside the window (undici: 2 s before the advertised')
  line('# timeout) and none is closed under a request at exit.')
}

/** spec.template.metadata: the annotations doctor reads, and Istio's proxy settings. */
function metadata (plan: Plan, line: Line): void {
  line('spec:')
  if (plan.warmup) {
    line(`  # the app warms up for ${sec(plan.warmup.ms)}: the rollout takes the next old pod down only once`)
    line('  # the new one has had its warmup (Deployment, StatefulSet, DaemonSet)')
    line(`  minReadySeconds: ${plan.warmup.minReadySeconds}`)
  }
  line('  template:')
  line('    metadata:')
  line('      annotations:')
  line('        # read by `lameduck doctor` to check the manifest against the same numbers')
  for (const [k, v] of Object.entries(plan.annotations)) line(`        ${k}: ${q(v)}`)
  if (plan.istio) {
    line(`        # ${plan.istio.mode} injection (native by default from Istio 1.27): said here so the pod is the same on every mesh`)
    line(`        sidecar.istio.io/nativeSidecar: ${q(String(plan.istio.mode === 'native'))}`)
    line('        # the request gauges the sidecar step\'s idle rule reads (Istio\'s default stats keep no http.* stat)')
    line(`        sidecar.istio.io/statsInclusionSuffixes: ${q(plan.istio.statsInclusionSuffixes)}`)
    const pc = plan.istio.proxyConfig
    line('        # Istio proxy settings:')
    line('        # - holdApplicationUntilProxyStarts: the app container starts only once the proxy')
    line('        #   is ready, so its first outbound calls (registering, config) go through')
    line('        # - EXIT_ON_ZERO_ACTIVE_CONNECTIONS: after its SIGTERM the proxy exits as soon as no')
    line('        #   connection is left, instead of after a fixed terminationDrainDuration')
    if (plan.istio.mode === 'classic') {
      line(`        # - MINIMUM_DRAIN_DURATION ${pc.proxyMetadata.MINIMUM_DRAIN_DURATION}: the proxy gets SIGTERM only once the app is offline`)
      line('        #   (wait-drained below); this covers the app closing before connections are counted')
    } else {
      line(`        # - MINIMUM_DRAIN_DURATION ${pc.proxyMetadata.MINIMUM_DRAIN_DURATION}: a native sidecar gets SIGTERM only after the app exited;`)
      line('        #   the pause before it counts connections')
    }
    line(`        # - terminationDrainDuration ${pc.terminationDrainDuration}: only used if exit-on-zero is turned off again`)
    line('        proxy.istio.io/config: |')
    line(`          holdApplicationUntilProxyStarts: ${pc.holdApplicationUntilProxyStarts}`)
    line(`          terminationDrainDuration: ${pc.terminationDrainDuration}`)
    line('          proxyMetadata:')
    line(`            EXIT_ON_ZERO_ACTIVE_CONNECTIONS: ${q(pc.proxyMetadata.EXIT_ON_ZERO_ACTIVE_CONNECTIONS)}`)
    line(`            MINIMUM_DRAIN_DURATION: ${pc.proxyMetadata.MINIMUM_DRAIN_DURATION}`)
  }
}

/** The grace period, and Envoy as a native sidecar. */
function podSpec (plan: Plan, line: Line): void {
  line('    spec:')
  line('      # kubelet SIGKILLs the pod this long after preStop starts: the plugin\'s shutdownTimeoutMs')
  line(`      # ${sec(plan.shutdownTimeoutMs)}${'sleep' in plan.preStop || plan.preStop.exec.command[0] === 'sleep' ? ' after the preStop sleep' : ''} + ${KILL_MARGIN_S} s margin${plan.istio ? ` + ${ISTIO_MINIMUM_DRAIN_S} s for the proxy's MINIMUM_DRAIN_DURATION` : ''}`)
  line(`      terminationGracePeriodSeconds: ${plan.terminationGracePeriodSeconds}`)
  if (plan.kubernetes !== null) accessPodSpec(plan.kubernetes, line)
  if (plan.sidecar === 'native') {
    line('      initContainers:')
    line('        - name: envoy  # your Envoy sidecar, as a native sidecar (Kubernetes >= 1.29)')
    line('          # kubelet starts it before the app and stops it only after the app has exited,')
    line('          # so it needs no preStop; the plugin drains it after the window (sidecar option)')
    line('          restartPolicy: Always')
  }
}

/** The app container: preStop and readiness probe. */
function appContainer (plan: Plan, line: Line): void {
  const w = plan.window
  line('      containers:')
  line(`        - name: ${plan.container}`)
  if (plan.kubernetes !== null) accessEnv(plan.kubernetes, line)
  line('          # the app writes its last drain\'s account to /dev/termination-log (kubectl describe pod')
  line('          # shows it); the log\'s tail instead when the container failed without writing it')
  line(`          terminationMessagePolicy: ${plan.terminationMessagePolicy}`)
  line('          lifecycle:')
  line('            preStop:')
  const hook = plan.preStop
  if ('sleep' in hook) {
    line(`              # ${plan.preStopWhy}`)
    line('              sleep:')
    line(`                seconds: ${hook.sleep.seconds}`)
  } else if (hook.exec.command[0] === 'sleep') {
    line('              exec:')
    line(`                # ${plan.preStopWhy}`)
    line(`                command: [${hook.exec.command.map(q).join(', ')}]`)
  } else {
    line('              exec:')
    line(`                # blocks until the app is offline: deregistered, the ${sec(w.totalMs)} window passed,`)
    line(`                # ${plan.sidecar ? 'the sidecar drained, ' : ''}nothing in flight; kubelet sends SIGTERM after it`)
    line(`                command: [${hook.exec.command.map(q).join(', ')}]`)
  }
  const p = plan.readinessProbe
  line('          readinessProbe:')
  const failing = 'grpc' in p ? 'NOT_SERVING (grpc.health.v1)' : '503'
  line(`            # ${failing} from the start of a drain: out of the Service within ${p.periodSeconds} × ${p.failureThreshold} = ${p.periodSeconds * p.failureThreshold} s`)
  line('            # of a manual /offline (pod termination removes the endpoint by itself)')
  if ('grpc' in p) {
    line('            grpc:')
    line(`              port: ${p.grpc.port}`)
  } else {
    line('            httpGet:')
    line(`              path: ${p.httpGet.path}`)
    line(`              port: ${p.httpGet.port}`)
  }
  line(`            periodSeconds: ${p.periodSeconds}`)
  line(`            failureThreshold: ${p.failureThreshold}`)
}

/** The istio-proxy container's preStop (wait-drained). */
function istioProxy (plan: Plan, line: Line): void {
  if (plan.istio?.sidecarPreStop) {
    line('        - name: istio-proxy  # merged by Istio into the injected sidecar')
    line('          image: auto')
    line('          lifecycle:')
    line('            preStop:')
    line('              exec:')
    line('                # keeps the proxy up until the app is offline, so traffic flows both ways for')
    line('                # the whole drain (the proxy container needs the lameduck binary: see examples/k8s)')
    line(`                command: [${plan.istio.sidecarPreStop.exec.command.map(q).join(', ')}]`)
  }
}

function shutdownWhy (plan: Plan): string {
  const parts = [`${formatSeconds(plan.window.totalMs)} window`]
  if (plan.sidecarPhase) parts.push(`${formatSeconds(plan.sidecarPhase.ms)} sidecar phase`)
  parts.push(`${formatSeconds(plan.maxRequestMs)} longest request`, `${formatSeconds(CLOSE_SLACK_MS)} close`)
  if (plan.telemetryFlushMs > 0) parts.push(`${formatSeconds(plan.telemetryFlushMs)} OpenTelemetry flush`)
  return parts.join(' + ')
}

function jsWindows (windows: Plan['plugin']['windows']): string {
  if (typeof windows === 'string') return `'${windows}'`
  const fields: string[] = []
  if (windows.preset !== undefined) fields.push(`preset: '${windows.preset}'`)
  for (const part of WINDOW_PARTS) if (windows[part] !== undefined) fields.push(`${part}: ${windows[part]}`)
  return `{ ${fields.join(', ')} }`
}
