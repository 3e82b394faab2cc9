import type { Worker } from 'node:cluster'
import { checkKeys, InvalidOptionError, withMethods, type Logger } from '@lameduck/core'
import type { AdminAnswer, AdminBackend } from './admin-actions.ts'
import { serveAdmin, type AdminServer } from './admin.ts'
import { stderrLogger } from './logger.ts'
import { deregistrationState } from './metrics.ts'
import { resolveAdmin, resolveSignals } from './options.ts'
import { cluster as loadCluster } from './builtins.ts'
import { isAck, isAttached, isReply, type Action, type Ask, type Reply } from './cluster-worker.ts'

/** How long the primary waits for a worker to acknowledge an ask before answering 503 for it. */
const ACK_TIMEOUT_MS = 2_000

export interface ClusterAdminOptions {
  /** Default '127.0.0.1'. A non-loopback host requires `token`. */
  host?: string
  /** Default 54199: the one admin port of the pod, held by the primary. */
  port?: number
  token?: string
  logger?: Logger
  /**
   * Signals on which the primary runs every worker's graceful shutdown (offline
   * sequence, then close) and exits once they are done: kubelet signals only
   * PID 1, and a worker cut off from its primary exits at once. Default
   * ['SIGTERM', 'SIGINT']; false to handle them yourself.
   */
  signals?: NodeJS.Signals[] | false
}

/**
 * One admin API for a `node:cluster` pod, served by the primary: /offline,
 * /online, /status and /metrics fan out to every worker over the cluster IPC
 * channel (each worker runs attach() with `admin: false` or `port: 'auto'`),
 * so a preStop hook drains all of them at once. Answers with each worker's
 * own answer; the status code is the worst of them.
 */
const CLUSTER_ADMIN_KEYS = { host: true, port: true, token: true, logger: true, signals: true } satisfies Record<keyof ClusterAdminOptions, true>

export async function clusterAdmin (options: ClusterAdminOptions = {}): Promise<AdminServer> {
  const cluster = loadCluster()
  if (!cluster.isPrimary) throw new InvalidOptionError('clusterAdmin', 'runs in the cluster primary; in the workers, attach() with admin: false answers it over IPC')
  // The same checks as attach()'s admin option, named as written here (host, port, token).
  checkKeys('', options, CLUSTER_ADMIN_KEYS)
  const { logger: givenLogger, signals: givenSignals, ...listener } = options
  const { host, port, token } = resolveAdmin(listener, '') as Exclude<ReturnType<typeof resolveAdmin>, false>
  const signals = resolveSignals(givenSignals)
  const logger = givenLogger === undefined ? stderrLogger() : withMethods<Logger>('logger', givenLogger, ['info', 'warn', 'error'], 'a pino-compatible logger')
  const ask = workerAsker(logger)

  // A worker that attaches once the pod is shutting down must not register and serve until SIGKILL.
  let shuttingDown = false
  const late: Array<Promise<unknown>> = []
  const onWorkerMessage = (worker: Worker, msg: unknown): void => {
    if (!shuttingDown || !isAttached(msg)) return
    logger.info({ lameduck: { worker: worker.id } }, `lameduck cluster: worker ${worker.id} attached while the pod is shutting down; telling it to shut down`)
    late.push(ask(worker, 'shutdown', true).then(() => { if (worker.isConnected()) worker.disconnect() }))
  }
  cluster.on('message', onWorkerMessage)

  const workers = (): Worker[] => Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined && w.isConnected())

  async function fanOut (action: 'offline' | 'online' | 'status', wait = false): Promise<AdminAnswer> {
    const list = workers()
    if (list.length === 0) return { statusCode: 503, body: { error: 'no workers', state: 'unknown' } }
    const answers = await Promise.all(list.map(async (w) => ({ worker: w.id, pid: w.process.pid, ...(await ask(w, action, wait)) as AdminAnswer })))
    const states = new Set(answers.map((a) => a.body.state))
    const report = worstReport(answers.map((a) => a.body.report))
    return {
      statusCode: Math.max(...answers.map((a) => a.statusCode)),
      body: {
        state: states.size === 1 ? [...states][0] : 'mixed',
        ...(report === undefined ? {} : { report }),
        workers: answers.map((a) => ({ worker: a.worker, pid: a.pid, statusCode: a.statusCode, ...a.body }))
      }
    }
  }

  const backend: AdminBackend = {
    state: () => 'cluster',
    offline: (wait) => fanOut('offline', wait),
    online: (wait) => fanOut('online', wait),
    status: async () => (await fanOut('status')).body,
    metrics: async () => mergeExpositions(await Promise.all(workers().map(async (w) => [String(w.id), ((await ask(w, 'metrics', false)) as { text?: string }).text ?? ''] as const)))
  }
  const server = await serveAdmin({ host, port, token, logger }, backend)
  const uninstall = installPrimarySignals(signals, logger, async () => {
    shuttingDown = true
    const list = workers()
    const answers = await Promise.all(list.map(async (w) => [w, await ask(w, 'shutdown', true)] as const))
    // A worker that answered is done; one that did not answer stays connected, and shuts down if it attaches later.
    for (const [w, answer] of answers) if (w.isConnected() && (answer as AdminAnswer).statusCode !== 503) w.disconnect()
    await server.close()
    await Promise.all(late)
    return answers.length
  })
  return { ...server, close: async () => { uninstall(); cluster.off('message', onWorkerMessage); await server.close() } }
}

type AskWorker = (worker: Worker, action: Action, wait: boolean) => Promise<Reply['answer']>

/**
 * Asks one worker. A worker that has not attached lameduck yet (or whose event
 * loop is stuck) never acknowledges: after ACK_TIMEOUT_MS it is answered for
 * with 503, so no admin call or shutdown waits on it forever. Once acknowledged,
 * the answer may take a whole drain (the worker's own bounds apply).
 */
function workerAsker (logger: Logger): AskWorker {
  let next = 0
  return function ask (worker, action, wait) {
    const id = ++next
    return new Promise((resolve) => {
      const done = (answer: Reply['answer']): void => { clearTimeout(silent); worker.off('message', onMessage); worker.off('exit', onExit); resolve(answer) }
      const onMessage = (msg: unknown): void => {
        if (isAck(msg) && msg.id === id) clearTimeout(silent)
        if (isReply(msg) && msg.id === id) done(msg.answer)
      }
      const onExit = (): void => { done({ statusCode: 503, body: { error: 'worker exited', state: 'stopped' } }) }
      const silent = setTimeout(() => {
        logger.warn({ lameduck: { worker: worker.id, action } }, `lameduck cluster: worker ${worker.id} did not answer ${action} within ${ACK_TIMEOUT_MS} ms (attach() not called yet, or its event loop is blocked); answering 503 for it`)
        done({ statusCode: 503, body: { error: 'worker not answering', message: `worker ${worker.id} has not attached lameduck yet, or its event loop is blocked`, state: 'unknown' } })
      }, ACK_TIMEOUT_MS)
      worker.on('message', onMessage)
      worker.on('exit', onExit)
      worker.send({ lameduck: 'admin', id, action, wait } satisfies Ask)
    })
  }
}

function installPrimarySignals (signals: NodeJS.Signals[] | false, log: Logger, shutdown: () => Promise<number>): () => void {
  if (signals === false) return () => {}
  let received: NodeJS.Signals | null = null
  const handler = (signal: NodeJS.Signals): void => {
    if (received !== null) {
      log.error({ lameduck: { signal, first: received } }, `lameduck cluster: second signal ${signal} after ${received}; exiting now`)
      process.exit(1)
    }
    received = signal
    const started = Date.now()
    log.info({ lameduck: { signal } }, `lameduck cluster: ${signal} received: running every worker's offline sequence, then closing them`)
    shutdown().then((n) => {
      log.info({ lameduck: { signal, workers: n, ms: Date.now() - started } }, `lameduck cluster: ${n} worker(s) drained and closed ${Date.now() - started} ms after ${signal}; the primary exits once its event loop is empty`)
    }, (err: Error) => {
      log.error({ err }, 'lameduck cluster: error while shutting the workers down')
      process.exit(1)
    })
  }
  for (const s of signals) process.on(s, handler)
  return () => { for (const s of signals) process.off(s, handler) }
}

type ReportView = { outcome?: string, totalMs?: number } & Record<string, unknown>

/**
 * The report a single-process client (`lameduck prestop`) reads: the one that
 * matters most, a cancelled drain, then an unconfirmed deregistration, else the longest drain.
 */
function worstReport (reports: unknown[]): ReportView | undefined {
  const list = reports.filter((r): r is ReportView => typeof r === 'object' && r !== null)
  if (list.length === 0) return undefined
  return list.find((r) => r.outcome === 'cancelled') ??
    list.find((r) => deregistrationState(r) === 'unconfirmed') ??
    list.reduce((a, b) => ((b.totalMs ?? 0) > (a.totalMs ?? 0) ? b : a))
}

/** Merges the workers' expositions into one: each family once, every sample labelled with its worker. */
export function mergeExpositions (texts: ReadonlyArray<readonly [string, string]>): string {
  const families = new Map<string, { meta: string[], samples: string[] }>()
  for (const [worker, text] of texts) {
    let current: { meta: string[], samples: string[] } | undefined
    for (const line of text.split('\n')) {
      const meta = /^# (HELP|TYPE) (\S+)/.exec(line)
      if (meta !== null) {
        const name = meta[2]!
        if (!families.has(name)) families.set(name, { meta: [], samples: [] })
        current = families.get(name)!
        if (!current.meta.some((m) => m.startsWith(`# ${meta[1]!} `))) current.meta.push(line)
        continue
      }
      if (line === '' || line.startsWith('#') || current === undefined) continue
      const brace = line.indexOf('{')
      const space = line.indexOf(' ')
      const label = `worker="${worker}"`
      current.samples.push(brace !== -1 && brace < space ? `${line.slice(0, brace + 1)}${label},${line.slice(brace + 1)}` : `${line.slice(0, space)}{${label}}${line.slice(space)}`)
    }
  }
  return [...families.values()].flatMap((f) => [...f.meta, ...f.samples]).join('\n') + '\n'
}
