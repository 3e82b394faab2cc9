// Which connection the options ask for: a kubeconfig, the pod's service account, or (neither
// given) in-cluster when running in a pod and the default kubeconfig otherwise.
import { flag, InvalidOptionError, record, show } from '@lameduck/core'
import type { ApiConnection } from './connection.ts'
import { inClusterConnection } from './connection.ts'
import { defaultKubeconfigPath, kubeconfigConnection } from './kubeconfig.ts'

export function connect (input: { kubeconfig?: unknown, inCluster?: unknown } | undefined, env: NodeJS.ProcessEnv = process.env): ApiConnection {
  const inCluster = flag('inCluster', input?.inCluster, input?.kubeconfig === undefined && (env.KUBERNETES_SERVICE_HOST ?? '') !== '')
  if (inCluster && input?.kubeconfig !== undefined) throw new InvalidOptionError('inCluster', 'give either inCluster: true or kubeconfig, not both')
  if (inCluster) return inClusterConnection(undefined, env)
  const k = input?.kubeconfig
  if (k === undefined) return kubeconfigConnection(defaultKubeconfigPath(env))
  if (typeof k === 'string') {
    if (k === '') throw new InvalidOptionError('kubeconfig', 'must be a file path or { path, context }, got an empty string')
    return kubeconfigConnection(k)
  }
  const o = record('kubeconfig', k, "{ path: '~/.kube/config', context: 'kind-dev' }")
  for (const key of Object.keys(o)) if (key !== 'path' && key !== 'context') throw new InvalidOptionError(`kubeconfig.${key}`, 'unknown option; known options are path, context')
  if (o.path !== undefined && (typeof o.path !== 'string' || o.path === '')) throw new InvalidOptionError('kubeconfig.path', `must be a file path, got ${show(o.path)}`)
  if (o.context !== undefined && (typeof o.context !== 'string' || o.context === '')) throw new InvalidOptionError('kubeconfig.context', `must be a context name, got ${show(o.context)}`)
  return kubeconfigConnection((o.path as string | undefined) ?? defaultKubeconfigPath(env), o.context as string | undefined)
}
