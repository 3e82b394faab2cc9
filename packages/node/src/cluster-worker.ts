// The IPC between a cluster's primary (clusterAdmin(), in cluster.ts) and its workers:
// the messages, and the worker's side, which every engine installs. Kept apart from the
// primary's side so an app that is not a cluster primary does not load that.
import { redactText } from '@lameduck/core'
import type { AdminAnswer, AdminBackend } from './admin-actions.ts'
import { cluster as loadCluster } from './builtins.ts'

export type Action = 'offline' | 'online' | 'status' | 'metrics' | 'shutdown'
export interface Ask { lameduck: 'admin', id: number, action: Action, wait: boolean }
export interface Reply { lameduck: 'admin-reply', id: number, answer: AdminAnswer | { text: string } }
/** A worker's "got it": sent at once, so the primary can tell a worker that never attached from a long drain. */
interface Ack { lameduck: 'admin-ack', id: number }
/** A worker's hello once its engine answers: a primary already shutting down tells it to shut down too. */
export interface Attached { lameduck: 'admin-attached' }

const isAsk = (m: unknown): m is Ask => typeof m === 'object' && m !== null && (m as Ask).lameduck === 'admin' && typeof (m as Ask).id === 'number'
export const isReply = (m: unknown): m is Reply => typeof m === 'object' && m !== null && (m as Reply).lameduck === 'admin-reply'
export const isAck = (m: unknown): m is Ack => typeof m === 'object' && m !== null && (m as Ack).lameduck === 'admin-ack'
export const isAttached = (m: unknown): m is Attached => typeof m === 'object' && m !== null && (m as Attached).lameduck === 'admin-attached'

/**
 * In a cluster worker, answers the primary's clusterAdmin() over the IPC
 * channel with this worker's own admin actions. A no-op elsewhere. Returns the uninstaller.
 */
export function workerResponder (backend: AdminBackend, shutdown: () => Promise<void>): () => void {
  // Only a process with an IPC channel can be a worker: node:cluster is not loaded into every other app.
  if (typeof process.send !== 'function' || !loadCluster().isWorker) return () => {}
  const onMessage = (msg: unknown): void => {
    if (!isAsk(msg)) return
    if (process.connected) process.send!({ lameduck: 'admin-ack', id: msg.id } satisfies Ack)
    const answer = async (): Promise<Reply['answer']> => {
      if (msg.action === 'status') return { statusCode: 200, body: await backend.status() }
      if (msg.action === 'metrics') return { text: backend.metrics === undefined ? '' : await backend.metrics() }
      if (msg.action === 'shutdown') { await shutdown(); return { statusCode: 200, body: { state: backend.state() } } }
      return await backend[msg.action](msg.wait)
    }
    answer()
      .catch((err: Error) => ({ statusCode: 500, body: { error: 'worker error', message: redactText(err.message) } }))
      .then((a) => { if (process.connected) process.send!({ lameduck: 'admin-reply', id: msg.id, answer: a } satisfies Reply) })
      .catch(() => {})
  }
  process.on('message', onMessage)
  if (process.connected) process.send({ lameduck: 'admin-attached' } satisfies Attached)
  return () => { process.off('message', onMessage) }
}
