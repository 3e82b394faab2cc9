// Fastify's default keepAliveTimeout (72 s) outlives the drain window: an app that
// did not choose its own gets Node's 5 s (or the window, if shorter), so a correct
// app starts without the engine's keep-alive warning; one that chose keeps it.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import Fastify from 'fastify'
import { memoryRegistry, type Logger } from '@lameduck/core'
import lameduck from '@lameduck/fastify'

function capture (): Logger & { warnings: string[], child: () => Logger } {
  const warnings: string[] = []
  const noop = (): void => {}
  const log = { warnings, debug: noop, info: noop, error: noop, fatal: noop, trace: noop, level: 'info', silent: noop, warn: (_obj: unknown, msg?: string) => { warnings.push(msg ?? '') }, child: () => log }
  return log as never
}

for (const [given, windowMs, expected, warned] of [[undefined, 10_000, 5_000, false], [undefined, 2_000, 2_000, false], [30_000, 10_000, 30_000, true], [4_000, 10_000, 4_000, false]] as const) {
  test(`keepAliveTimeout ${given ?? 'not given'}, window ${windowMs} ms: the server uses ${expected} ms${warned ? ', and the engine warns' : ', no warning'}`, async (t) => {
    const log = capture()
    const app = Fastify({ loggerInstance: log as never, ...(given === undefined ? {} : { keepAliveTimeout: given }) })
    t.after(() => app.close())
    await app.register(lameduck, { service: 'orders', host: '127.0.0.1', registry: memoryRegistry(), windows: { clientFetchMs: windowMs }, warmupMs: 0, signals: false, admin: false })
    await app.listen({ host: '127.0.0.1', port: 0 })
    assert.equal(app.server.keepAliveTimeout, expected)
    const warning = log.warnings.find((w) => /keep-alive/.test(w))
    assert.equal(warning !== undefined, warned, warning ?? 'no warning')
  })
}
