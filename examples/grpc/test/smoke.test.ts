// The example end to end: the devkit Eureka server and the consumer in this process,
// providers as the child processes `npm run provider` starts, windows scaled ×0.01
// (30 s + 30 s → 600 ms, plus 1 s of margin for a busy machine). One provider is
// drained by the real `lameduck prestop` under load: grpc.health.v1 turns NOT_SERVING,
// the consumer loses nothing. The negative control kills a provider without a drain.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import * as grpc from '@grpc/grpc-js'
import { startEureka, type EurekaServer } from '@lameduck/devkit'
import { healthServiceDefinition, ServingStatus } from '@lameduck/grpc'
import { until } from '@lameduck/test-utils'
import { startConsumer } from '../src/consumer.ts'
import { settings } from '../src/orders.ts'

const ENV = { SCALE: '0.01', MARGIN_MS: '1000', BOOT_MS: '200' }
const s = settings(ENV)
const providerEntry = fileURLToPath(new URL('../src/provider.ts', import.meta.url))
const cliBin = fileURLToPath(import.meta.resolve('@lameduck/cli/bin'))
const HealthClient = grpc.makeGenericClientConstructor(healthServiceDefinition, 'Health') as unknown as new (target: string, creds: grpc.ChannelCredentials) => grpc.Client & {
  check(req: { service: string }, cb: (err: grpc.ServiceError | null, res?: { status: number }) => void): void
}

interface Provider { address: string, admin: string, child: ChildProcess, output: string[] }

async function startProvider (eurekaUrl: string): Promise<Provider> {
  const child = spawn(process.execPath, ['--conditions=@lameduck/source', providerEntry], {
    env: { ...process.env, ...ENV, EUREKA_URL: eurekaUrl, PORT: '0', ADMIN_PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const output: string[] = []
  createInterface({ input: child.stderr! }).on('line', (line) => output.push(`stderr: ${line}`))
  const m = await new Promise<RegExpMatchArray>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      output.push(line)
      const found = line.match(/listening on (\S+), admin (\S+);/)
      if (found) resolve(found)
    })
    child.once('exit', (code) => reject(new Error(`provider exited with ${code} before listening:\n${output.join('\n')}`)))
  })
  return { address: m[1]!, admin: m[2]!, child, output }
}

function health (p: Provider): Promise<number> {
  const client = new HealthClient(p.address, grpc.credentials.createInsecure())
  return new Promise<number>((resolve, reject) => client.check({ service: '' }, (err, res) => err ? reject(err) : resolve(res!.status))).finally(() => client.close())
}

describe('examples/grpc', () => {
  let eureka: EurekaServer
  const providers: Provider[] = []

  before(async () => {
    eureka = await startEureka({ port: 0, responseCacheUpdateIntervalMs: s.cacheMs })
    providers.push(...await Promise.all([startProvider(eureka.url), startProvider(eureka.url)]))
  })

  after(async () => {
    for (const p of providers) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL')
    await eureka?.close()
  })

  it('grpc.health.v1 follows the lifecycle; `lameduck prestop` drains a provider under load with zero failed calls', async () => {
    const [a, b] = providers as [Provider, Provider]
    await until(async () => (await health(a)) === ServingStatus.SERVING && (await health(b)) === ServingStatus.SERVING, 'both providers SERVING')
    const consumer = startConsumer({ eurekaUrl: eureka.url, fetchMs: s.fetchMs, rps: 50, delayMs: 20 })
    try {
      await until(() => (consumer.stats.byInstance.get(a.address) ?? 0) >= 5 && (consumer.stats.byInstance.get(b.address) ?? 0) >= 5, 'calls on both providers')
      const prestop = spawn(process.execPath, ['--conditions=@lameduck/source', cliBin, 'prestop', '--admin', a.admin], { stdio: ['ignore', 'pipe', 'pipe'] })
      const prestopOut: string[] = []
      for (const stream of [prestop.stdout!, prestop.stderr!]) createInterface({ input: stream }).on('line', (l) => prestopOut.push(l))
      await until(async () => (await health(a)) === ServingStatus.NOT_SERVING, 'a NOT_SERVING from the start of its drain')
      const [code] = await once(prestop, 'exit')
      assert.equal(code, 0, prestopOut.join('\n'))
      assert.ok(!eureka.snapshot().some((i) => i.port === Number(a.address.split(':')[1])), 'a is out of Eureka')
      const [aAt, bAt] = [consumer.stats.byInstance.get(a.address) ?? 0, consumer.stats.byInstance.get(b.address) ?? 0]
      await until(() => consumer.stats.byInstance.get(b.address)! > bAt + 30, 'b takes the traffic')
      assert.equal(consumer.stats.byInstance.get(a.address) ?? 0, aAt, 'nothing reached a after its drain')
      a.child.kill('SIGTERM')
      const [exit] = await once(a.child, 'exit')
      assert.equal(exit, 0, a.output.join('\n'))
    } finally {
      const stats = await consumer.stop()
      assert.equal(stats.failed, 0, stats.errors.join('\n'))
    }
  })

  it('negative control: a provider killed without a drain (no preStop, SIGKILL) fails the calls it had', async () => {
    // c is new, so the consumer ramps it (warmup): b, warm, has most calls in flight and is the one killed.
    const b = providers[1]!
    const c = await startProvider(eureka.url)
    providers.push(c)
    const consumer = startConsumer({ eurekaUrl: eureka.url, fetchMs: s.fetchMs, rps: 50, delayMs: 300 })
    try {
      await until(() => (consumer.stats.byInstance.get(b.address) ?? 0) >= 10 && (consumer.stats.byInstance.get(c.address) ?? 0) >= 1, 'calls on both providers')
      b.child.kill('SIGKILL')
      const cAt = consumer.stats.byInstance.get(c.address)!
      await until(() => consumer.stats.byInstance.get(c.address)! > cAt + 30, 'c serves on')
    } finally {
      const stats = await consumer.stop()
      assert.ok(stats.failed > 0, `the calls b had in flight failed: ${JSON.stringify({ ...stats, byInstance: Object.fromEntries(stats.byInstance) })}`)
    }
  })
})
