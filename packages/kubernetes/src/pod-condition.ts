// The readiness gate's writer: sets this pod's own condition (default lameduck.dev/registered)
// with a strategic merge patch on pods/status, as a Deployment with `readinessGates` waits for.
// When to set it (after the registry confirmed the registration, after part of the warmup) is
// the lifecycle's call; this only writes it, and says plainly when RBAC forbids it.
import { hostname } from 'node:os'
import { InvalidOptionError, duration, record, show, silentLogger, withMethods } from '@lameduck/core'
import type { Logger } from '@lameduck/core'
import { ApiClient } from './api-client.ts'
import { connect } from './connect.ts'
import { dnsLabel, type KubeconfigOption } from './options.ts'

export const REGISTERED_CONDITION = 'lameduck.dev/registered'

export interface PodConditionOptions {
  /** This pod's name. Default: $POD_NAME, else the host name. */
  pod?: string
  /** Default: the pod's own namespace in-cluster, the kubeconfig context's, else 'default'. */
  namespace?: string
  /** The condition type, as the Deployment's readinessGates name it. Default 'lameduck.dev/registered'. */
  conditionType?: string
  kubeconfig?: string | KubeconfigOption
  inCluster?: boolean
  requestTimeoutMs?: number
  logger?: Logger
}

export interface ConditionDetail {
  /** CamelCase, as Kubernetes reasons are. Default 'Registered' / 'NotRegistered'. */
  reason?: string
  message?: string
}

/** A condition type: an optional DNS-subdomain prefix and a name (`lameduck.dev/registered`). */
const CONDITION_TYPE = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/

export class PodConditionWriter {
  readonly pod: string
  readonly namespace: string
  readonly conditionType: string
  readonly #api: ApiClient
  readonly #log: Logger
  #last: boolean | undefined

  constructor (options: PodConditionOptions = {}) {
    const o = record('podCondition(options)', options, "{ conditionType: 'lameduck.dev/registered' }") as PodConditionOptions
    for (const key of Object.keys(o)) {
      if (!['pod', 'namespace', 'conditionType', 'kubeconfig', 'inCluster', 'requestTimeoutMs', 'logger'].includes(key)) throw new InvalidOptionError(key, 'unknown option; known options are pod, namespace, conditionType, kubeconfig, inCluster, requestTimeoutMs, logger')
    }
    const conn = connect(o as { kubeconfig?: unknown, inCluster?: unknown })
    this.pod = o.pod ?? process.env.POD_NAME ?? hostname()
    if (typeof this.pod !== 'string' || !/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(this.pod)) throw new InvalidOptionError('pod', `must be the pod's name, got ${show(this.pod)}`)
    this.namespace = o.namespace === undefined ? conn.namespace ?? 'default' : dnsLabel('namespace', o.namespace)
    this.conditionType = o.conditionType ?? REGISTERED_CONDITION
    if (typeof this.conditionType !== 'string' || !CONDITION_TYPE.test(this.conditionType)) throw new InvalidOptionError('conditionType', `must be a condition type such as 'lameduck.dev/registered', got ${show(o.conditionType)}`)
    this.#log = o.logger === undefined ? silentLogger : withMethods<Logger>('logger', o.logger, ['debug', 'info', 'warn', 'error'], 'a pino-compatible logger')
    this.#api = new ApiClient(conn, { requestTimeoutMs: duration('requestTimeoutMs', o.requestTimeoutMs, 10_000, { positive: true }), maxEventBytes: 1024 * 1024 })
  }

  /** The last status this writer set, or undefined before the first. */
  get status (): boolean | undefined { return this.#last }

  /**
   * Sets the condition to True or False. Rejects with KubernetesApiError (403:
   * LAMEDUCK_ERR_K8S_FORBIDDEN when the Role lacks `pods/status: patch`).
   */
  async set (status: boolean, detail: ConditionDetail = {}, signal?: AbortSignal): Promise<void> {
    const condition = {
      type: this.conditionType,
      status: status ? 'True' : 'False',
      reason: detail.reason ?? (status ? 'Registered' : 'NotRegistered'),
      message: (detail.message ?? '').slice(0, 1000),
      lastProbeTime: null,
      // Only a change of status is a transition; the API keeps what we send.
      lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z')
    }
    const path = `/api/v1/namespaces/${encodeURIComponent(this.namespace)}/pods/${encodeURIComponent(this.pod)}/status`
    await this.#api.patchJson(path, { status: { conditions: [condition] } }, 'application/strategic-merge-patch+json', `patch pods/status of '${this.pod}' in '${this.namespace}'`, signal)
    if (this.#last !== status) this.#log.info({ pod: this.pod, condition: this.conditionType, status: condition.status }, `kubernetes: pod condition ${this.conditionType} is ${condition.status}`)
    this.#last = status
  }

  close (): void {
    this.#api.close()
  }
}

/** Writes this pod's readiness-gate condition. Throws InvalidOptionError or KubernetesConfigError at once. */
export function podConditionWriter (options?: PodConditionOptions): PodConditionWriter {
  return new PodConditionWriter(options)
}
