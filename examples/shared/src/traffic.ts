// Steady traffic through a dispatcher, with one line a second that says who
// answered and what failed, and a line the moment an instance announces it is
// leaving. Requests leave on a fixed beat whether or not earlier ones answered.
import { request, type Dispatcher } from 'undici'

export interface TrafficOptions {
  /** Where each request goes: 'http://orders/hello' for the balancer (it routes the service name), or a function that picks. */
  url: string | (() => string)
  dispatcher: Dispatcher
  /** One request every intervalMs. */
  intervalMs: number
  print: (line: string) => void
  /** Period of the summary lines. Default 1000 ms; 0 prints none. */
  summaryMs?: number
  clock: () => string
  /** Appended to the line printed when an instance first says it is leaving. */
  leavingNote?: string
  /** Checks each 2xx answer's body: a reason it is wrong counts the request as failed (code BODY). */
  checkBody?: (body: string) => string | undefined
}

export interface TrafficStats {
  ok: number
  failed: number
  /** Every failure, in order: `code: message`. */
  errors: string[]
  /** Answers per instance (the provider's `x-instance` header). */
  byInstance: Map<string, number>
  /** When each instance first answered `x-lameduck-state: draining` (or offline). */
  leaving: Map<string, number>
  /** When each instance last answered. */
  lastAt: Map<string, number>
}

interface Period { ok: number, failed: number, byInstance: Map<string, number>, leaving: Set<string>, errors: Map<string, number> }

const newPeriod = (): Period => ({ ok: 0, failed: 0, byInstance: new Map(), leaving: new Set(), errors: new Map() })

function describeError (err: unknown): string {
  const e = err as { code?: string, reason?: string, message?: string, cause?: { code?: string } }
  const code = e.code ?? e.cause?.code ?? 'ERROR'
  return e.reason ? `${code} (${e.reason})` : code
}

/** Throws unless the answer is a 2xx (a 404 from a route that is not there is as lost as a 503) whose body passes `check`. */
async function checkAnswer (instance: string, status: number, body: { dump(): Promise<void>, text(): Promise<string> }, check?: (body: string) => string | undefined): Promise<void> {
  if (check === undefined) await body.dump()
  const wrong = check === undefined ? undefined : check(await body.text())
  if (status < 200 || status >= 300) throw Object.assign(new Error(`${instance} answered ${status}`), { code: `HTTP_${status}` })
  if (wrong !== undefined) throw Object.assign(new Error(`${instance} answered ${wrong}`), { code: 'BODY' })
}

export function startTraffic (o: TrafficOptions): { stats: TrafficStats, stop(): Promise<TrafficStats> } {
  const stats: TrafficStats = { ok: 0, failed: 0, errors: [], byInstance: new Map(), leaving: new Map(), lastAt: new Map() }
  let period = newPeriod()
  const pending = new Set<Promise<void>>()

  async function one (): Promise<void> {
    try {
      const res = await request(typeof o.url === 'string' ? o.url : o.url(), { dispatcher: o.dispatcher, headersTimeout: 10_000, bodyTimeout: 10_000 })
      const instance = String(res.headers['x-instance'] ?? '?')
      const state = res.headers['x-lameduck-state']
      await checkAnswer(instance, res.statusCode, res.body, o.checkBody)
      stats.ok++
      period.ok++
      stats.byInstance.set(instance, (stats.byInstance.get(instance) ?? 0) + 1)
      period.byInstance.set(instance, (period.byInstance.get(instance) ?? 0) + 1)
      stats.lastAt.set(instance, Date.now())
      if (typeof state === 'string') {
        period.leaving.add(instance)
        if (!stats.leaving.has(instance)) {
          stats.leaving.set(instance, Date.now())
          o.print(`${o.clock()}  ${instance} answered "x-lameduck-state: ${state}"${o.leavingNote ?? ''}`)
        }
      }
    } catch (err) {
      const what = describeError(err)
      stats.failed++
      period.failed++
      stats.errors.push(`${what}: ${(err as Error).message}`)
      period.errors.set(what, (period.errors.get(what) ?? 0) + 1)
    }
  }

  const beat = setInterval(() => {
    const p = one()
    pending.add(p)
    p.finally(() => pending.delete(p)).catch(() => {})
  }, o.intervalMs)

  const summarize = (): void => {
    const p = period
    period = newPeriod()
    const who = [...p.byInstance].sort(([a], [b]) => a.localeCompare(b))
      .map(([id, n]) => `${id} ${n}${p.leaving.has(id) ? ' (leaving)' : ''}`).join(', ')
    const why = [...p.errors].map(([code, n]) => `${code} ×${n}`).join(', ')
    o.print(`${o.clock()}  ${String(p.ok).padStart(3)} ok ${String(p.failed).padStart(3)} failed  │ ${who || '–'}${why ? `  │ FAILED: ${why}` : ''}`)
  }
  const summary = (o.summaryMs ?? 1_000) > 0 ? setInterval(summarize, o.summaryMs ?? 1_000) : null

  return {
    stats,
    async stop () {
      clearInterval(beat)
      if (summary !== null) clearInterval(summary)
      await Promise.all(pending)
      return stats
    }
  }
}
