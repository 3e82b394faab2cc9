// A pod as the kubelet runs it: the app container as a real child process, an
// HTTP readiness probe, and termination as Kubernetes does it — preStop exec,
// then SIGTERM, then SIGKILL when the grace period (counted from deletion) ends.
import { fork, spawn, type ChildProcess } from 'node:child_process'
import { EventEmitter, once } from 'node:events'
import type { Server } from 'node:net'
import { createInterface } from 'node:readline'
import { request, type Dispatcher } from 'undici'
import type { ProviderConfig } from './provider-process.ts'

export interface ProbeOptions {
  path: string
  periodMs: number
  timeoutMs: number
  successThreshold: number
  failureThreshold: number
  /** 'https' for a TLS app (the kubelet's `scheme: HTTPS`). Default 'http'. */
  scheme?: 'http' | 'https'
  /** Agent that speaks the app's transport (h2c, TLS trust). Default undici's global one. */
  dispatcher?: Dispatcher
}

export interface PodEvent { t: number, event: string, [k: string]: unknown }

export interface TerminationResult {
  id: string
  deletedAt: number
  preStopMs: number | null
  preStopExit: number | null
  sigtermAt: number
  exitedAt: number
  exitCode: number | null
  signal: string | null
  /** SIGKILLed at the end of the grace period. */
  killed: boolean
}

export interface PodOptions {
  config: ProviderConfig
  probe: ProbeOptions
  /** Extra node flags for the child (the source condition when running from TypeScript). */
  execArgv: string[]
  /** Sidecar container started before the app (e.g. a local Envoy); stopped after the app unless `sidecarStopsWithApp`. */
  sidecar?: SidecarContainer
  /** A listening socket the app inherits at fd LISTENER_FD (config.listenFd) instead of binding a port itself; closed here once handed over. */
  listener?: Server
  log?: (line: string) => void
}

/** The fd a pod's app finds its inherited listener at: after stdin, stdout, stderr and the IPC channel. */
export const LISTENER_FD = 4

export interface SidecarContainer {
  /** Port to advertise for the pod (the sidecar's listener). */
  readonly port: number
  readonly adminUrl: string
  /** Kubelet SIGTERM to the sidecar container: it drains and stops. */
  terminate(): Promise<void>
  close(): Promise<void>
}

const providerEntry = new URL(`./provider-app${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url)
/** `--transport grpc`: a grpc-js provider, probed as the kubelet's `grpc:` probe does (grpc.health.v1). */
const grpcProviderEntry = new URL(`./grpc-provider${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url)

export class Pod extends EventEmitter {
  readonly id: string
  readonly version: string
  readonly events: PodEvent[] = []
  readonly createdAt = Date.now()
  ready = false
  readyAt: number | null = null
  terminatingAt: number | null = null
  port = 0
  admin: string | null = null
  #child: ChildProcess | null = null
  #probeTimer: NodeJS.Timeout | null = null
  #exited: Promise<{ code: number | null, signal: string | null, at: number }> | null = null
  readonly #o: PodOptions

  constructor (options: PodOptions) {
    super()
    this.#o = options
    this.id = options.config.id
    this.version = options.config.version
  }

  get sidecar (): SidecarContainer | undefined { return this.#o.sidecar }

  /** Starts the container and the readiness probe; resolves once the app listens. */
  async start (): Promise<void> {
    const listener = this.#o.listener
    // Node has no public accessor for a server's fd; child_process takes the number and dups it into the child.
    const inherited = listener === undefined ? [] : [(listener as unknown as { _handle: { fd: number } })._handle.fd]
    const child = fork(this.#o.config.serve?.transport === 'grpc' ? grpcProviderEntry : providerEntry, [JSON.stringify(this.#o.config)], { execArgv: this.#o.execArgv, stdio: ['ignore', 'pipe', 'pipe', 'ipc', ...inherited] })
    if (listener?.listening === true) listener.close() // the child holds the socket now; the port stays bound throughout
    this.#child = child
    this.#exited = once(child, 'exit').then(([code, signal]) => ({ code: code as number | null, signal: signal as string | null, at: Date.now() }))
    const stderr: string[] = []
    createInterface({ input: child.stderr! }).on('line', (l) => {
      stderr.push(l)
      if (stderr.length > 20) stderr.shift()
      this.#o.log?.(`[${this.id} stderr] ${l}`)
    })
    const listening = new Promise<void>((resolve, reject) => {
      createInterface({ input: child.stdout! }).on('line', (line) => {
        let e: PodEvent
        try { e = JSON.parse(line) } catch { this.#o.log?.(`[${this.id}] ${line}`); return }
        this.events.push(e)
        this.emit('event', e)
        if (e.event === 'listening') { this.port = e.port as number; this.admin = e.admin as string | null; resolve() }
      })
      child.once('exit', (code) => {
        // Let the last stderr lines arrive before reporting them.
        setImmediate(() => reject(new Error(`pod ${this.id} exited with ${code} before listening:\n${stderr.join('\n')}`)))
      })
    })
    await listening
    this.#probe()
  }

  /** Where the pod is reached: the sidecar's listener if any, else the app. */
  get targetPort (): number { return this.#o.sidecar?.port ?? this.port }

  #probe (): void {
    const p = this.#o.probe
    let successes = 0
    let failures = 0
    const tick = async (): Promise<void> => {
      const ok = await this.#check(p)
      if (ok) { successes++; failures = 0 } else { failures++; successes = 0 }
      const wasReady = this.ready
      if (!this.ready && successes >= p.successThreshold) this.ready = true
      if (this.ready && failures >= p.failureThreshold) this.ready = false
      if (this.ready !== wasReady) {
        if (this.ready && this.readyAt === null) this.readyAt = Date.now()
        this.emit('ready', this.ready)
      }
      if (this.#probeTimer !== null) this.#probeTimer = setTimeout(() => { tick().catch(() => {}) }, p.periodMs)
    }
    this.#probeTimer = setTimeout(() => { tick().catch(() => {}) }, 0)
  }

  /** One probe: HTTP GET, or grpc.health.v1 Check for a gRPC app (the kubelet's `grpc:` probe). */
  async #check (p: ProbeOptions): Promise<boolean> {
    if (this.#o.config.serve?.transport === 'grpc') return (await import('./grpc-work.ts')).grpcProbe(this.port, p.timeoutMs)
    try {
      const res = await request(`${p.scheme ?? 'http'}://127.0.0.1:${this.port}${p.path}`, { headersTimeout: p.timeoutMs, bodyTimeout: p.timeoutMs, ...(p.dispatcher ? { dispatcher: p.dispatcher } : {}) })
      await res.body.dump()
      return res.statusCode >= 200 && res.statusCode < 400
    } catch {
      return false
    }
  }

  /**
   * Deletes the pod: `terminating` is emitted at once (the endpoints controller
   * reacts to it, concurrently), then preStop runs, then SIGTERM; SIGKILL at the
   * end of the grace period counted from deletion.
   */
  async terminate (options: { preStop: string[] | null, gracePeriodMs: number, nativeSidecar?: boolean }): Promise<TerminationResult> {
    const deletedAt = this.terminatingAt = Date.now()
    this.emit('terminating')
    const child = this.#child!
    // A classic sidecar container is terminated in parallel with the app (its own
    // preStop, then SIGTERM); a native sidecar (KEP-753) only after the app exited.
    let sidecarDone = options.nativeSidecar === true ? undefined : this.#o.sidecar?.terminate()
    const exited = this.#exited!
    let killed = false
    const killTimer = setTimeout(() => {
      killed = true
      child.kill('SIGKILL')
    }, options.gracePeriodMs)
    let preStopMs: number | null = null
    let preStopExit: number | null = null
    if (options.preStop !== null && options.preStop.length > 0) {
      const [cmd, ...args] = options.preStop.map((a) => a.replaceAll('{admin}', this.admin ?? '').replaceAll('{port}', String(this.port)))
      const started = Date.now()
      const hook = spawn(cmd!, args, { stdio: ['ignore', 'pipe', 'pipe'] })
      createInterface({ input: hook.stdout! }).on('line', (l) => this.#o.log?.(`[${this.id} preStop] ${l}`))
      createInterface({ input: hook.stderr! }).on('line', (l) => this.#o.log?.(`[${this.id} preStop] ${l}`))
      // The kubelet stops waiting for preStop when the grace period ends.
      const [code] = await Promise.race([once(hook, 'exit'), exited.then(() => [null])]) as [number | null]
      if (hook.exitCode === null) hook.kill('SIGKILL')
      preStopMs = Date.now() - started
      preStopExit = code
    }
    const sigtermAt = Date.now()
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
    const result = await exited
    clearTimeout(killTimer)
    sidecarDone ??= this.#o.sidecar?.terminate()
    await sidecarDone
    this.#stopProbe()
    this.ready = false
    return { id: this.id, deletedAt, preStopMs, preStopExit, sigtermAt, exitedAt: result.at, exitCode: result.code, signal: result.signal, killed }
  }

  #stopProbe (): void {
    if (this.#probeTimer !== null) clearTimeout(this.#probeTimer)
    this.#probeTimer = null
  }

  /** Hard stop for cleanup. */
  async kill (): Promise<void> {
    this.#stopProbe()
    const child = this.#child
    if (child !== null && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL')
      await this.#exited
    }
    await this.#o.sidecar?.close()
  }
}
