import assert from 'node:assert/strict'
import type { Instance } from '@lameduck/core'

/** What the balancer relies on from any Discovery: string id and host, a real port, string metadata. */
export function assertWellFormed (list: unknown, service: string): asserts list is Instance[] {
  assert.ok(Array.isArray(list), 'instances() returns an array')
  for (const i of list as Instance[]) {
    assert.equal(typeof i, 'object')
    assert.equal(typeof i.id, 'string', `id is a string (${String(i.id)})`)
    assert.ok(i.id.length > 0, 'id is not empty')
    assert.equal(i.service, service)
    assert.equal(typeof i.host, 'string', `host is a string (${String(i.host)})`)
    assert.ok(i.host.length > 0, 'host is not empty')
    assert.ok(Number.isInteger(i.port) && i.port >= 1 && i.port <= 65_535, `port ${String(i.port)} is a TCP port`)
    assert.equal(i.status, 'UP')
    assert.ok(typeof i.metadata === 'object' && i.metadata !== null && !Array.isArray(i.metadata), 'metadata is an object')
    for (const [k, v] of Object.entries(i.metadata)) assert.equal(typeof v, 'string', `metadata.${k} is a string`)
  }
}
