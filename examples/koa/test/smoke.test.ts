// The example as `npm start` runs it, against the local Nacos naming server: it
// registers, `lameduck prestop` takes it offline under keep-alive traffic with
// a 300 ms window, and SIGTERM then ends it.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { fileURLToPath } from 'node:url'
import { startNacos, type NacosServer } from '@lameduck/devkit'
import { answer, drainUnderTraffic, startExample, stopExample, until, type Example } from '@lameduck/example-shared/smoke'

const entry = fileURLToPath(new URL('../src/server.ts', import.meta.url))

describe('examples/koa', () => {
  let nacos: NacosServer
  let example: Example
  const registered = (): boolean => nacos.instances('orders').some((i) => i.port === example.port && i.healthy && i.enabled)

  before(async () => {
    nacos = await startNacos({ port: 0 })
    example = await startExample(entry, { NACOS_SERVER: nacos.serverList, WINDOW_MS: '300' })
  })
  after(async () => {
    if (example) await stopExample(example, 'SIGKILL')
    await nacos?.close()
  })

  it('registers in Nacos, then drains under traffic through lameduck prestop with 0 failed requests', async () => {
    await until(registered, 'the instance in Nacos')
    assert.deepEqual(await answer(example), { status: 200, body: { hello: 'world', state: 'serving' } }, 'GET /hello reaches the app\'s route')
    const { prestop, stats, lines } = await drainUnderTraffic(example)
    assert.equal(prestop.code, 0, prestop.output)
    assert.equal(stats.failed, 0, stats.errors.slice(0, 5).join('\n'))
    assert.ok(lines.some((l) => l.includes('"x-lameduck-state: draining"')), `answers while draining carry the mark: ${lines.join('\n')}`)
    assert.equal(nacos.instances('orders').filter((i) => i.port === example.port).length, 0, 'the instance left Nacos')
    assert.ok(example.output.some((l) => /^stderr: \d\d:\d\d:\d\d\.\d{3} INFO {2}lameduck: draining → offline \(drained, /.test(l)), `lameduck's readable log line for the transition: ${example.output.join('\n')}`)
    assert.equal(example.output.filter((l) => l.includes('draining → offline')).length, 1, 'said once, not twice')
  })

  it('SIGTERM once offline: exits 0', async () => {
    assert.equal(await stopExample(example), 0, example.output.join('\n'))
  })
})
