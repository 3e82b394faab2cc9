// A kubeconfig for development: the current (or named) context's cluster and user. Token,
// token file and client certificates are supported; exec and auth-provider plugins are not
// (their credentials come from cloud CLIs): `kubectl proxy` and a kubeconfig pointing at it work.
import { readFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { dirname, isAbsolute, resolve } from 'node:path'
import { parse } from 'yaml'
import { fileToken, type ApiConnection } from './connection.ts'
import { KubernetesConfigError } from './errors.ts'

type Obj = Record<string, unknown>
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)

/** `$KUBECONFIG`'s first file, else ~/.kube/config. */
export function defaultKubeconfigPath (env: NodeJS.ProcessEnv = process.env): string {
  const first = env.KUBECONFIG?.split(':').find((p) => p !== '')
  return first ?? resolve(homedir(), '.kube', 'config')
}

function named (doc: Obj, list: string, name: string, path: string): Obj {
  const items = Array.isArray(doc[list]) ? doc[list] as unknown[] : []
  const found = items.find((i) => isObj(i) && i.name === name)
  const inner = isObj(found) ? found[list.slice(0, -1)] : undefined
  if (!isObj(inner)) throw new KubernetesConfigError(`kubeconfig ${path}: no ${list.slice(0, -1)} named '${name}'`)
  return inner
}

export function kubeconfigConnection (path: string, context?: string): ApiConnection {
  let doc: unknown
  try {
    doc = parse(readFileSync(path, 'utf8'))
  } catch (err) {
    throw new KubernetesConfigError(`cannot read kubeconfig ${path}: ${(err as Error).message}`, { cause: err })
  }
  if (!isObj(doc)) throw new KubernetesConfigError(`kubeconfig ${path} is not a kubeconfig (no mapping at the top)`)
  const contextName = context ?? doc['current-context']
  if (typeof contextName !== 'string' || contextName === '') throw new KubernetesConfigError(`kubeconfig ${path} has no current-context: pass kubeconfig: { path, context }`)
  const ctx = named(doc, 'contexts', contextName, path)
  const cluster = named(doc, 'clusters', String(ctx.cluster), path)
  const user = typeof ctx.user === 'string' && ctx.user !== '' ? named(doc, 'users', ctx.user, path) : {}
  const base = dirname(path)
  const file = (key: string, dataKey: string, where: Obj): Buffer | undefined => {
    const data = where[dataKey]
    if (typeof data === 'string' && data !== '') return Buffer.from(data, 'base64')
    const p = where[key]
    if (typeof p !== 'string' || p === '') return undefined
    const full = isAbsolute(p) ? p : resolve(base, p)
    try { return readFileSync(full) } catch (err) { throw new KubernetesConfigError(`kubeconfig ${path}: cannot read ${key} ${full}: ${(err as Error).message}`, { cause: err }) }
  }
  if (user.exec !== undefined || user['auth-provider'] !== undefined) {
    throw new KubernetesConfigError(`kubeconfig ${path}: user '${String(ctx.user)}' uses an ${user.exec !== undefined ? 'exec' : 'auth-provider'} plugin, which lameduck does not run; use a token, client certificates, or \`kubectl proxy\` with a kubeconfig pointing at it`)
  }
  let server: URL
  try { server = new URL(String(cluster.server)) } catch { throw new KubernetesConfigError(`kubeconfig ${path}: cluster '${String(ctx.cluster)}' has no valid server URL`) }
  let tokens: Pick<ApiConnection, 'token' | 'tokenRejected'> = { token: () => undefined, tokenRejected: () => {} }
  if (typeof user.token === 'string' && user.token !== '') {
    const token = user.token
    tokens = { token: () => token, tokenRejected: () => {} }
  } else if (typeof user.tokenFile === 'string' && user.tokenFile !== '') {
    tokens = fileToken(isAbsolute(user.tokenFile) ? user.tokenFile : resolve(base, user.tokenFile))
  }
  return {
    server,
    ca: file('certificate-authority', 'certificate-authority-data', cluster),
    cert: file('client-certificate', 'client-certificate-data', user),
    key: file('client-key', 'client-key-data', user),
    insecure: cluster['insecure-skip-tls-verify'] === true,
    ...tokens,
    namespace: typeof ctx.namespace === 'string' && ctx.namespace !== '' ? ctx.namespace : undefined,
    source: `kubeconfig ${path} (context ${contextName})`
  }
}
