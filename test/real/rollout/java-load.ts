// The Java consumer's call log as the rollout lab's load source: each JSON line it prints becomes the
// same per-request record the lab's own LoadGenerator produces (ok / refused / reset / 5xx / timeout,
// with the instance that answered).
import type { LoadSource, Outcome, RequestRecord } from '@lameduck/devkit'
import type { CallLine, JavaConsumer } from '../helpers/eureka.ts'

/** What the Java client saw, from the line's status and exception text (Spring's RestClient messages). */
export function outcomeOf (line: CallLine): Outcome {
  if (line.error === null && line.status >= 200 && line.status < 400) return 'ok'
  if (line.status >= 500) return 'status5xx'
  const e = line.error ?? ''
  if (/No instances available/i.test(e)) return 'noInstance'
  if (/Connection refused/i.test(e)) return 'refused'
  if (/Connection reset|Unexpected end of file|end of stream|Broken pipe|closed/i.test(e)) return 'reset'
  if (/timed out|Timeout/i.test(e)) return 'timeout'
  return 'other'
}

export function toRecord (line: CallLine, startedAt: number): RequestRecord {
  const outcome = outcomeOf(line)
  return {
    t: line.t - startedAt,
    ms: line.ms,
    outcome,
    instance: line.instance,
    ...(outcome === 'ok' ? {} : { detail: line.error ?? String(line.status) })
  }
}

/** Starts and stops the consumer's call loop; `records` holds the calls made in between. */
export function javaLoad (consumer: JavaConsumer): LoadSource {
  const records: RequestRecord[] = []
  let startedAt = 0
  let state: 'idle' | 'running' | 'stopped' = 'idle'
  let stopped: (() => void) | null = null
  consumer.onLine((line) => {
    if (state === 'idle') return
    if (line === '{"lab":"stopped"}') { stopped?.(); return }
    if (!line.startsWith('{"lab":"call"')) return
    let call: CallLine
    try { call = JSON.parse(line) as CallLine } catch { return }
    if (call.t >= startedAt) records.push(toRecord(call, startedAt))
  })
  return {
    records,
    async start () {
      startedAt = Date.now()
      state = 'running'
      await consumer.load(true)
    },
    async stop () {
      if (state !== 'running') return
      state = 'stopped'
      // The marker follows the loop's last call line on stdout: every call is recorded then.
      const marker = new Promise<void>((resolve) => { stopped = resolve })
      await consumer.load(false)
      await marker
    }
  }
}
