import { test } from 'node:test'
import assert from 'node:assert/strict'
import Fastify from 'fastify'
import { request } from 'undici'
import { parse, parseDocument, stringify } from 'yaml'
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
      // With a sidecar the plugin's default adds sidecar.drainTimeoutMs (30 s by default).
      // (Compared through the plugin without a sidecar: its Envoy wiring is not in yet.)
      const expected = plugin.shutdownTimeoutMs + (sidecar === undefined ? 0 : 30_000)
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
    const [app, proxy] = t.spec.containers
    assert.deepEqual(app.lifecycle.preStop, { exec: { command: ['lameduck', 'prestop'] } })
    assert.deepEqual(proxy.lifecycle.preStop, { exec: { command: ['lameduck', 'wait-drained'] } })
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
  for (const args of [['--windows', 'eureka-ribbon'], ['--windows', 'nacos', '--sidecar', 'istio'], ['--windows', 'kubernetes', '--client-fetch-ms', '1500', '--sidecar', 'native'], ['--windows', 'none']]) {
    const patch = parse((await runCommand(plan, args)).stdout) as { spec: { template: { metadata: object, spec: { containers: Array<Record<string, unknown>>, initContainers?: Array<Record<string, unknown>> } } } }
    const spec = patch.spec.template.spec
    for (const c of [...spec.containers, ...(spec.initContainers ?? [])]) {
      c.image ??= c.name === 'envoy' ? 'envoyproxy/envoy:v1.31.2' : 'registry.example.com/orders:1.0.0'
      if (c.name === 'app') c.ports = [{ containerPort: 3000 }]
    }
    const deployment = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'orders' }, spec: { selector: { matchLabels: { app: 'orders' } }, template: patch.spec.template } }
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
