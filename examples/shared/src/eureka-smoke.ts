// The smoke suite of an example that registers in Eureka (Express, node:http):
// it registers, `lameduck prestop` takes it offline under keep-alive traffic with
// a 300 ms window, and SIGTERM then ends it. One suite, so the examples stay alike.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { startEureka, type EurekaServer } from '@lameduck/devkit'
import { answer, drainUnderTraffic, startExample, stopExample, until, type Example } from './smoke.ts'

export function describeEurekaExample (name: string, entry: string): void {
  describe(name, () => {
    let eureka: EurekaServer
    let example: Example
    const registered = (): boolean => eureka.snapshot().some((i) => i.app === 'ORDERS' && i.port === example.port && i.status === 'UP')

    before(async () => {
      eureka = await startEureka({ port: 0 })
      example = await startExample(entry, { EUREKA_URL: eureka.url, WINDOW_MS: '300' })
    })
    after(async () => {
      if (example) await stopExample(example, 'SIGKILL')
      await eureka?.close()
    })

    it('registers in Eureka, then drains under traffic through lameduck prestop with 0 failed requests', async () => {
      await until(registered, 'the instance UP in Eureka')
      assert.deepEqual(await answer(example), { status: 200, body: { hello: 'world', state: 'serving' } }, 'GET /hello reaches the app\'s route')
      const { prestop, stats, lines } = await drainUnderTraffic(example)
      assert.equal(prestop.code, 0, prestop.output)
      assert.equal(stats.failed, 0, stats.errors.slice(0, 5).join('\n'))
      assert.ok(lines.some((l) => l.includes('"x-lameduck-state: draining"')), `answers while draining carry the mark: ${lines.join('\n')}`)
      assert.ok(!registered(), 'the instance left Eureka')
      assert.ok(example.output.some((l) => /^stderr: \d\d:\d\d:\d\d\.\d{3} INFO {2}lameduck: draining → offline \(drained, /.test(l)), `lameduck's readable log line for the transition: ${example.output.join('\n')}`)
      assert.equal(example.output.filter((l) => l.includes('draining → offline')).length, 1, 'said once, not twice')
    })

    it('SIGTERM once offline: exits 0', async () => {
      assert.equal(await stopExample(example), 0, example.output.join('\n'))
    })
  })
}
