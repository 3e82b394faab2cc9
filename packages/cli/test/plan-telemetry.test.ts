import { test } from 'node:test'
import assert from 'node:assert/strict'
import { parseDocument } from 'yaml'
import { plan } from '../src/commands/plan.ts'
import { computePlan, type Plan } from '../src/plan.ts'
import { EXIT } from '../src/command.ts'
import { runCommand } from './helpers.ts'

type Patch = { spec: { template: { spec: { terminationGracePeriodSeconds: number, containers: Array<Record<string, unknown>> } } } }

test('plan sets the app container\'s terminationMessagePolicy: the drain\'s account, else the log\'s tail on error', async () => {
  for (const argv of [['--windows', 'eureka-ribbon'], ['--windows', 'nacos', '--sidecar', 'istio'], ['--windows', 'kubernetes', '--no-cli']]) {
    const out = await runCommand(plan, argv)
    assert.equal(out.code, EXIT.OK)
    const doc = parseDocument(out.stdout)
    assert.deepEqual(doc.errors, [])
    const [app] = (doc.toJS() as Patch).spec.template.spec.containers
    assert.equal(app!.terminationMessagePolicy, 'FallbackToLogsOnError', argv.join(' '))
    const json = JSON.parse((await runCommand(plan, [...argv, '--json'])).stdout) as Plan
    assert.equal(json.terminationMessagePolicy, 'FallbackToLogsOnError')
  }
})

test('plan --telemetry-flush-ms reserves the OpenTelemetry flush in shutdownTimeoutMs and the grace period', async () => {
  const without = computePlan({ windows: 'eureka-ribbon' })
  const withFlush = computePlan({ windows: 'eureka-ribbon', telemetryFlushMs: 3_000 })
  assert.equal(withFlush.shutdownTimeoutMs, without.shutdownTimeoutMs + 3_000)
  assert.equal(withFlush.plugin.shutdownTimeoutMs, without.plugin.shutdownTimeoutMs + 3_000)
  assert.equal(withFlush.terminationGracePeriodSeconds, without.terminationGracePeriodSeconds + 3)
  assert.deepEqual(withFlush.plugin.openTelemetry, { flushTimeoutMs: 3_000 })
  assert.equal(without.plugin.openTelemetry, undefined)

  const out = await runCommand(plan, ['--windows', 'eureka-ribbon', '--telemetry-flush-ms', '3000'])
  assert.equal(out.code, EXIT.OK)
  assert.match(out.stdout, /^# {3}openTelemetry: \{ flush: \(\) => sdk\.shutdown\(\), flushTimeoutMs: 3000 \},$/m)
  assert.match(out.stdout, new RegExp(`shutdownTimeoutMs: ${withFlush.shutdownTimeoutMs},  // .* \\+ 3 s OpenTelemetry flush$`, 'm'))
  assert.equal((parseDocument(out.stdout).toJS() as Patch).spec.template.spec.terminationGracePeriodSeconds, withFlush.terminationGracePeriodSeconds)
  await assert.rejects(runCommand(plan, ['--windows', 'eureka-ribbon', '--telemetry-flush-ms', 'soon']), /--telemetry-flush-ms must be a non-negative integer/)
})
