// Where the API server is and how to authenticate: in-cluster (the pod's service account)
// or from a kubeconfig (development). Both end in one ApiConnection.
import { readFileSync, statSync } from 'node:fs'
import { KubernetesConfigError } from './errors.ts'

export interface ApiConnection {
  /** https://host:port (or http:// for `kubectl proxy`), no trailing slash. */
  server: URL
  ca?: Buffer
  cert?: Buffer
  key?: Buffer
  /** Skip TLS verification (kubeconfig `insecure-skip-tls-verify`). */
  insecure: boolean
  /** The bearer token for the next request, or undefined (client certificates, kubectl proxy). */
  token: () => string | undefined
  /** A 401 came back: read the token again before the next request (it may have rotated). */
  tokenRejected: () => void
  /** The namespace the config points at: the pod's own, or the kubeconfig context's. */
  namespace?: string
  /** For describe() and errors: 'in-cluster' or 'kubeconfig <path> (context <name>)'. */
  source: string
}

export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount'

/**
 * A token file read again when it changed (kubelet rotates projected tokens, about hourly) or
 * after a 401, and at most every `recheckMs` otherwise, as client-go caches it for a minute.
 */
export function fileToken (path: string, recheckMs = 60_000, now = Date.now): Pick<ApiConnection, 'token' | 'tokenRejected'> {
  let token: string | undefined
  let checkedAt = -Infinity
  let mtime = -1
  const read = (): string => {
    try {
      const stat = statSync(path)
      if (token === undefined || stat.mtimeMs !== mtime) {
        token = readFileSync(path, 'utf8').trim()
        mtime = stat.mtimeMs
      }
    } catch (err) {
      // A rotation in progress (the kubelet swaps a symlink): keep the last token we had.
      if (token === undefined) throw new KubernetesConfigError(`cannot read the token file ${path}: ${(err as Error).message}`, { cause: err })
    }
    return token!
  }
  return {
    token: () => {
      if (now() - checkedAt >= recheckMs) { checkedAt = now(); return read() }
      return token ?? read()
    },
    tokenRejected: () => { checkedAt = -Infinity }
  }
}

/** The pod's own API access: KUBERNETES_SERVICE_HOST/PORT, the service account's token, CA and namespace. */
export function inClusterConnection (dir = SERVICE_ACCOUNT_DIR, env: NodeJS.ProcessEnv = process.env): ApiConnection {
  const host = env.KUBERNETES_SERVICE_HOST
  const port = env.KUBERNETES_SERVICE_PORT
  if (host === undefined || host === '' || port === undefined || port === '') {
    throw new KubernetesConfigError('inCluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set: this process does not run in a pod (pass kubeconfig for development)')
  }
  let ca: Buffer
  try {
    ca = readFileSync(`${dir}/ca.crt`)
  } catch (err) {
    throw new KubernetesConfigError(`inCluster: cannot read ${dir}/ca.crt (automountServiceAccountToken: false?): ${(err as Error).message}`, { cause: err })
  }
  let namespace: string | undefined
  try { namespace = readFileSync(`${dir}/namespace`, 'utf8').trim() } catch { namespace = undefined }
  const tokens = fileToken(`${dir}/token`)
  tokens.token() // fail now, at the edge, when there is no token at all
  return {
    server: new URL(`https://${host.includes(':') ? `[${host}]` : host}:${port}`),
    ca,
    insecure: false,
    ...tokens,
    namespace,
    source: 'in-cluster'
  }
}
