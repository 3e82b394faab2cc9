import { test } from 'node:test'
import assert from 'node:assert/strict'
import Fastify from 'fastify'
import { request } from 'undici'
import { parse, parseAllDocuments, parseDocument, stringify } from 'yaml'
import { WINDOW_PRESETS, propagationWindow, type WindowPreset } from '@lameduck/core'
import lameduck from '@lameduck/fastify'
import { plan } from '../src/commands/plan.ts'
import { doctor } from '../src/commands/doctor.ts'
import { computePlan, type Plan } from '../src/plan.ts'
import { EXIT } from '../src/command.ts'
import { runCommand } from './helpers.ts'

const presets = Object.keys(WINDOW_PRESETS) as WindowPreset[]

/** What @lameduck/fastify itself resolves for these options, read from its admin /status. */
async function pluginNumbers (options: { windows: WindowPreset, maxRequestMs: number }): Promise<{ windowMs: number, breakdown: unknown, shutdownTimeoutMs: number }> {
  const app = Fastify()
  await app.register(lameduck, { service: 'orders', host: '127.0.0.1', windows: options.windows, maxRequestMs: options.maxRequestMs, signals: false, admin: { port: 0 } })
  await app.ready()
  try {
    const res = await request(`${app.lameduck.adminUrl}/status`)
    const status = await res.body.json() as { window: { totalMs: number, breakdown: unknown }, shutdownTimeoutMs: number }
    return { windowMs: status.window.totalMs, breakdown: status.window.breakdown, shutdownTimeoutMs: status.shutdownTimeoutMs }
  } finally {
    await app.close()
  }
}

test('plan numbers equal core\'s calculator and the plugin\'s own defaults, for every preset', async () => {
  for (const preset of presets) {
    const maxRequestMs = 7_000
    const plugin = await pluginNumbers({ windows: preset, maxRequestMs })
    for (const sidecar of [undefined, 'istio', 'native'] as const) {
      const p = computePlan({ windows: preset, maxRequestMs, sidecar })
      assert.deepEqual(p.window, propagationWindow(preset), preset)
      assert.equal(p.window.totalMs, plugin.windowMs, `${preset}: window`)
      assert.deepEqual(p.window.breakdown, plugin.breakdown, `${preset}: breakdown`)
      // With a sidecar the budget adds the sidecar phase under the idle rule: Istio drains
      // 'immediate' (told to close at once): 7 s request + 2 s idleQuietMs + 2 × 1 s polls;
      // a plain Envoy drains 'gradual' over its 600 s drain time: bounded by drainTimeoutMs 30 s.
      const expected = plugin.shutdownTimeoutMs + (sidecar === undefined ? 0 : sidecar === 'istio' ? 11_000 : 30_000)
      assert.equal(p.shutdownTimeoutMs, expected, `${preset} ${sidecar}: shutdownTimeoutMs`)
      assert.equal(p.plugin.shutdownTimeoutMs, expected)
      // The grace period outlasts the plugin's own bound, plus the proxy's minimum drain with Istio.
      assert.equal(p.terminationGracePeriodSeconds, Math.ceil(expected / 1000) + 5 + (sidecar === 'istio' ? 5 : 0))
    }
  }
})

test('plan --json prints the computed plan; the YAML patch carries the same numbers', async () => {
  for (const preset of presets) {
    const json = await runCommand(plan, ['--windows', preset, '--sidecar', 'istio', '--json'])
    assert.equal(json.code, EXIT.OK)
    const printed = JSON.parse(json.stdout) as Plan
    assert.deepEqual(printed, JSON.parse(JSON.stringify(computePlan({ windows: preset, sidecar: 'istio' }))))

    const yaml = await runCommand(plan, ['--windows', preset, '--sidecar', 'istio'])
    assert.equal(yaml.code, EXIT.OK)
    const doc = parseDocument(yaml.stdout)
    assert.deepEqual(doc.errors, [])
    const patch = doc.toJS() as { spec: { template: { metadata: { annotations: Record<string, string> }, spec: Record<string, any> } } }
    const t = patch.spec.template
    assert.equal(t.spec.terminationGracePeriodSeconds, printed.terminationGracePeriodSeconds)
    assert.equal(t.metadata.annotations['lameduck.dev/windows'], preset)
    assert.equal(t.metadata.annotations['lameduck.dev/max-request-ms'], '30000')
    assert.deepEqual(parse(t.metadata.annotations['proxy.istio.io/config']!), {
      holdApplicationUntilProxyStarts: true,
      terminationDrainDuration: '5s',
      proxyMetadata: { EXIT_ON_ZERO_ACTIVE_CONNECTIONS: 'true', MINIMUM_DRAIN_DURATION: '5s' }
    })
    // Native injection by default (Istio >= 1.27): no istio-proxy container to merge, kubelet stops it last.
    assert.equal(t.metadata.annotations['sidecar.istio.io/nativeSidecar'], 'true')
    assert.equal(t.metadata.annotations['sidecar.istio.io/statsInclusionSuffixes'], 'downstream_rq_active,downstream_rq_total')
    assert.equal(t.spec.containers.length, 1)
    const [app] = t.spec.containers
    assert.deepEqual(app.lifecycle.preStop, { exec: { command: ['lameduck', 'prestop'] } })
    assert.match(yaml.stdout, new RegExp(`^# Propagation window: ${printed.window.totalMs / 1000} s`, 'm'))
    assert.match(yaml.stdout, new RegExp(`shutdownTimeoutMs: ${printed.shutdownTimeoutMs},`))
  }
})

test('plan overrides change the window exactly as core computes it', async () => {
  const run = await runCommand(plan, ['--windows', 'eureka-ribbon', '--balancer-refresh-ms', '5000', '--margin-ms', '2000', '--max-request-ms', '1000', '--json'])
  const printed = JSON.parse(run.stdout) as Plan
  assert.deepEqual(printed.window, propagationWindow({ preset: 'eureka-ribbon', balancerRefreshMs: 5_000, marginMs: 2_000 }))
  assert.equal(printed.window.totalMs, 67_000)
  assert.equal(printed.shutdownTimeoutMs, 67_000 + 1_000 + 5_000)
  assert.deepEqual(printed.plugin.windows, { preset: 'eureka-ribbon', balancerRefreshMs: 5_000, marginMs: 2_000 })
  assert.equal(printed.annotations['lameduck.dev/windows'], '{"preset":"eureka-ribbon","balancerRefreshMs":5000,"marginMs":2000}')
})

test('the plan, merged into a Deployment, passes doctor', async () => {
  for (const args of [['--windows', 'eureka-ribbon'], ['--windows', 'nacos', '--sidecar', 'istio'], ['--windows', 'nacos', '--sidecar', 'istio', '--istio-version', '1.26'], ['--windows', 'kubernetes', '--client-fetch-ms', '1500', '--sidecar', 'native'], ['--windows', 'none'],
    ['--windows', 'kubernetes', '--no-cli'], ['--windows', 'kubernetes', '--no-cli', '--kubernetes-version', '1.31'], ['--windows', 'eureka-spring', '--warmup-ms', '60000'], ['--windows', 'kubernetes', '--ambient'],
    ['--windows', 'kubernetes', '--sidecar', 'native', '--envoy-drain-strategy', 'immediate', '--idle-quiet-ms', '500']]) {
    const patch = parse((await runCommand(plan, args)).stdout) as { spec: { minReadySeconds?: number, template: { metadata: object, spec: { containers: Array<Record<string, unknown>>, initContainers?: Array<Record<string, unknown>> } } } }
    const spec = patch.spec.template.spec
    for (const c of [...spec.containers, ...(spec.initContainers ?? [])]) {
      c.image ??= c.name === 'envoy' ? 'envoyproxy/envoy:v1.31.2' : 'registry.example.com/orders:1.0.0'
      if (c.name === 'app') c.ports = [{ containerPort: 3000 }]
    }
    const labels = args.includes('--ambient') ? { app: 'orders', 'istio.io/dataplane-mode': 'ambient' } : { app: 'orders' }
    ;(patch.spec.template.metadata as { labels?: object }).labels = labels
    const deployment = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'orders' }, spec: { ...(patch.spec.minReadySeconds !== undefined ? { minReadySeconds: patch.spec.minReadySeconds } : {}), selector: { matchLabels: { app: 'orders' } }, template: patch.spec.template } }
    const checked = await runCommand(doctor, ['-', '--json'], { stdin: ReadableFrom(stringify(deployment)) })
    const result = JSON.parse(checked.stdout) as { findings: unknown[] }
    assert.deepEqual(result.findings, [], `lameduck plan ${args.join(' ')}`)
    assert.equal(checked.code, EXIT.OK)
  }
})

test('plan explains bad flags', async () => {
  await assert.rejects(runCommand(plan, []), /--windows is required: one of eureka-ribbon, eureka-spring, eureka-node, nacos, kubernetes, none/)
  await assert.rejects(runCommand(plan, ['--windows', 'eureka']), /--windows: unknown preset 'eureka'/)
  await assert.rejects(runCommand(plan, ['--windows', 'nacos', '--margin-ms', '1.5']), /--margin-ms must be a non-negative integer of milliseconds \(got '1\.5'\)/)
  await assert.rejects(runCommand(plan, ['--windows', 'nacos', '--sidecar', 'linkerd']), /--sidecar must be 'istio' or 'native'/)
})

function ReadableFrom (text: string): NodeJS.ReadableStream {
  return (async function * () { yield Buffer.from(text) })() as unknown as NodeJS.ReadableStream
}

test('plan bounds the server\'s keepAliveTimeout by the window (whole seconds: the Keep-Alive hint\'s unit)', async () => {
  for (const preset of presets) {
    const p = computePlan({ windows: preset })
    assert.equal(p.maxKeepAliveTimeoutMs, p.window.totalMs >= 1_000 ? Math.floor(p.window.totalMs / 1000) * 1000 : null, preset)
  }
  const k8s = await runCommand(plan, ['--windows', 'kubernetes'])
  assert.equal(k8s.code, EXIT.OK)
  const window = propagationWindow('kubernetes').totalMs
  assert.match(k8s.stdout, new RegExp(`# Server: keepAliveTimeout at most ${Math.floor(window / 1000) * 1000} `))
  const short = computePlan({ windows: { clientFetchMs: 800 } })
  assert.equal(short.maxKeepAliveTimeoutMs, null, 'no hint fits a window under 1 s')
  const shortText = await runCommand(plan, ['--client-fetch-ms', '800'])
  assert.match(shortText.stdout, /The window is under 1 s/)
})

test('plan --sidecar istio --istio-version 1.26: the classic sidecar, pinned, with the wait-drained preStop', async () => {
  const yaml = await runCommand(plan, ['--windows', 'kubernetes', '--sidecar', 'istio', '--istio-version', '1.26'])
  const t = (parse(yaml.stdout) as { spec: { template: { metadata: { annotations: Record<string, string> }, spec: { containers: Array<Record<string, any>> } } } }).spec.template
  assert.equal(t.metadata.annotations['sidecar.istio.io/nativeSidecar'], 'false')
  const proxy = t.spec.containers.find((c) => c.name === 'istio-proxy')!
  assert.deepEqual(proxy.lifecycle.preStop, { exec: { command: ['lameduck', 'wait-drained'] } })
  for (const v of ['1.27', '1.28.2', 'v1.30']) {
    const native = parse((await runCommand(plan, ['--windows', 'kubernetes', '--sidecar', 'istio', '--istio-version', v])).stdout)
    assert.equal(native.spec.template.metadata.annotations['sidecar.istio.io/nativeSidecar'], 'true', v)
    assert.equal(native.spec.template.spec.containers.length, 1, v)
  }
  await assert.rejects(runCommand(plan, ['--windows', 'kubernetes', '--sidecar', 'istio', '--istio-version', 'latest']), /--istio-version must look like 1\.27/)
  await assert.rejects(runCommand(plan, ['--windows', 'kubernetes', '--istio-version', '1.27']), /--istio-version needs --sidecar istio/)
})

test('plan: the sidecar phase follows the idle rule, bounded by drainTimeoutMs', () => {
  const istio = computePlan({ windows: 'kubernetes', maxRequestMs: 5_000, sidecar: 'istio' })
  assert.equal(istio.sidecarPhase!.ms, 5_000 + 2_000 + 2 * 1_000)
  assert.equal(istio.shutdownTimeoutMs, 15_000 + 9_000 + 5_000 + 5_000)
  // healthcheck/immediate on a plain Envoy: told to close at once.
  const immediate = computePlan({ windows: 'kubernetes', maxRequestMs: 5_000, sidecar: 'native', envoyDrainStrategy: 'immediate' })
  assert.equal(immediate.sidecarPhase!.ms, 9_000)
  // gradual: connections are told to close only after Envoy's drain time.
  const gradual = computePlan({ windows: 'kubernetes', maxRequestMs: 5_000, sidecar: 'native', envoyDrainStrategy: 'gradual', envoyDrainTimeMs: 8_000 })
  assert.equal(gradual.sidecarPhase!.ms, 8_000 + 2_000 + 2_000)
  const quiet = computePlan({ windows: 'kubernetes', maxRequestMs: 5_000, sidecar: 'istio', idleQuietMs: 500 })
  assert.equal(quiet.sidecarPhase!.ms, 5_000 + 500 + 2_000)
  const bounded = computePlan({ windows: 'kubernetes', maxRequestMs: 60_000, sidecar: 'istio', sidecarDrainTimeoutMs: 20_000 })
  assert.equal(bounded.sidecarPhase!.ms, 20_000)
  assert.equal(bounded.sidecarPhase!.bounded, true)
  assert.deepEqual(bounded.plugin.sidecar, { envoyAdmin: 'http://127.0.0.1:15000', drainTimeoutMs: 20_000, idleQuietMs: 2_000 })
})

test('plan --no-cli: the sleep action from Kubernetes 1.34, an exec sleep before; the grace period adds the sleep', async () => {
  const sleepy = parse((await runCommand(plan, ['--windows', 'kubernetes', '--max-request-ms', '5000', '--no-cli'])).stdout)
  const app = sleepy.spec.template.spec.containers[0]
  assert.deepEqual(app.lifecycle.preStop, { sleep: { seconds: 15 } })
  // sleep 15 s, then the app's SIGTERM path: window 15 + request 5 + close 5, + 5 s margin.
  assert.equal(sleepy.spec.template.spec.terminationGracePeriodSeconds, 15 + 25 + 5)
  const old = parse((await runCommand(plan, ['--windows', 'kubernetes', '--no-cli', '--kubernetes-version', '1.33'])).stdout)
  assert.deepEqual(old.spec.template.spec.containers[0].lifecycle.preStop, { exec: { command: ['sleep', '15'] } })
  const cli = parse((await runCommand(plan, ['--windows', 'kubernetes', '--kubernetes-version', '1.34'])).stdout)
  assert.deepEqual(cli.spec.template.spec.containers[0].lifecycle.preStop, { exec: { command: ['lameduck', 'prestop'] } })
  await assert.rejects(runCommand(plan, ['--windows', 'kubernetes', '--kubernetes-version', '2']), /--kubernetes-version must look like 1\.34/)
})

test('plan --warmup-ms --resources: minReadySeconds, the PDB and every balancer\'s ramp from one number', async () => {
  const run = await runCommand(plan, ['--windows', 'kubernetes', '--warmup-ms', '45000', '--resources', '--name', 'billing'])
  assert.equal(run.code, EXIT.OK)
  const docs = parseAllDocuments(run.stdout).map((d) => d.toJS())
  const [patch, pdb, dr, btp] = docs
  assert.equal(patch.spec.minReadySeconds, 45)
  assert.equal(patch.spec.template.metadata.annotations['lameduck.dev/warmup-ms'], '45000')
  assert.deepEqual(pdb.spec, { maxUnavailable: 1, selector: { matchLabels: { app: 'billing' } } })
  assert.equal(dr.spec.trafficPolicy.loadBalancer.warmupDurationSecs, '45s')
  assert.equal(btp.spec.loadBalancer.slowStart.window, '45s')
  const apisix = /# \{"type":"roundrobin".*\}$/m.exec(run.stdout)![0].slice(2)
  assert.equal(JSON.parse(apisix).warm_up_conf.slow_start_time_seconds, 45)
  await assert.rejects(runCommand(plan, ['--windows', 'kubernetes', '--name', 'Bad_Name']), /--name must be a DNS label/)
})

test('plan --ambient: no sidecar to drain, the preStop stays, ztunnel named', async () => {
  const run = await runCommand(plan, ['--windows', 'kubernetes', '--ambient'])
  assert.match(run.stdout, /ztunnel learns of the pod's/)
  const p = parse(run.stdout)
  assert.equal(p.spec.template.metadata.annotations['lameduck.dev/sidecar'], undefined)
  assert.deepEqual(p.spec.template.spec.containers[0].lifecycle.preStop, { exec: { command: ['lameduck', 'prestop'] } })
  await assert.rejects(runCommand(plan, ['--windows', 'kubernetes', '--ambient', '--sidecar', 'istio']), /--ambient has no sidecar to drain/)
})

test('plan --sidecar native with Envoy\'s default gradual drain says what immediate would give', async () => {
  const gradual = await runCommand(plan, ['--windows', 'kubernetes', '--sidecar', 'native', '--max-request-ms', '5000'])
  assert.match(gradual.stdout, /# Sidecar phase: 30 s = max\(5 s longest request, 600 s until every connection/)
  assert.match(gradual.stdout, /# the phase is then 9 s\./)
  const immediate = await runCommand(plan, ['--windows', 'kubernetes', '--sidecar', 'native', '--max-request-ms', '5000', '--envoy-drain-strategy', 'immediate'])
  assert.match(immediate.stdout, /# Sidecar phase: 9 s = max\(5 s longest request, 0 s until every connection/)
  assert.doesNotMatch(immediate.stdout, /the phase is then/)
})
