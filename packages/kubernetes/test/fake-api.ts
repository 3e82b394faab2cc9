// A stand-in API server for the unit tests of what the real one never sends on purpose:
// garbage lines, a line that never ends, slices with odd fields, 10,000 endpoints. Plain
// HTTP on 127.0.0.1 (a kubeconfig may point at `kubectl proxy`, which is plain HTTP too).
// test/k8s runs the same discovery against the real kube-apiserver.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { listen, close } from '@lameduck/test-utils'

export interface FakeApi {
  url: string
  kubeconfig: string
  /** Items the next list returns, and its resourceVersion. */
  slices: unknown[]
  resourceVersion: string
  /** Status to answer lists with instead (403, 500...), or 0. */
  listStatus: number
  /** Status to answer watches with, or 0. */
  watchStatus: number
  /** Requests seen: 'list', 'watch rv=<rv>', 'service'. */
  requests: string[]
  /** When set, any other bearer token is answered 401. */
  acceptToken: string | undefined
  /** The bearer tokens requests came with. */
  tokens: string[]
  /** Whether a Service GET finds the Service. */
  serviceExists: boolean
  /** PATCHes seen (pods/status), with their parsed bodies. */
  patches: Array<{ path: string, contentType: string, body: any }>
  /** Status to answer PATCHes with instead (403...), or 0. */
  patchStatus: number
  /** Writes raw text to every open watch. */
  send: (text: string) => void
  event: (type: string, object: unknown) => void
  /** Ends every open watch (the server's timeoutSeconds). */
  endWatches: () => void
  readonly watches: number
  close: () => Promise<void>
}

export function slice (name: string, endpoints: unknown, ports: unknown = [{ name: 'http', port: 8080, protocol: 'TCP' }], rv = '1'): Record<string, unknown> {
  return { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name, resourceVersion: rv, labels: { 'kubernetes.io/service-name': 'orders' } }, addressType: 'IPv4', ports, endpoints }
}

export function endpoint (ip: string, conditions: Record<string, unknown> = { ready: true, serving: true, terminating: false }, pod?: string): Record<string, unknown> {
  return { addresses: [ip], conditions, ...(pod === undefined ? {} : { targetRef: { kind: 'Pod', name: pod, uid: `uid-${pod}` } }), nodeName: 'node-1' }
}

export async function fakeApi (): Promise<FakeApi> {
  const open = new Set<ServerResponse>()
  // eslint-disable-next-line prefer-const -- assigned once the server listens; the handler reads it later
  let state: FakeApi
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://x')
    const token = (req.headers.authorization ?? '').replace(/^Bearer /, '')
    state.tokens.push(token)
    if (state.acceptToken !== undefined && token !== state.acceptToken) {
      res.writeHead(401, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ kind: 'Status', reason: 'Unauthorized', message: 'Unauthorized', code: 401 }))
      return
    }
    if (req.method === 'PATCH') {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        state.patches.push({ path: url.pathname, contentType: String(req.headers['content-type']), body: JSON.parse(Buffer.concat(chunks).toString()) })
        const status = state.patchStatus === 0 ? 200 : state.patchStatus
        res.writeHead(status, { 'content-type': 'application/json' })
        res.end(JSON.stringify(status === 200 ? { kind: 'Pod' } : { kind: 'Status', reason: status === 403 ? 'Forbidden' : 'InternalError', message: `status ${status} from the fake`, code: status }))
      })
      return
    }
    if (url.pathname.includes('/services/')) {
      state.requests.push('service')
      if (!state.serviceExists) { res.writeHead(404, { 'content-type': 'application/json' }); res.end(JSON.stringify({ kind: 'Status', reason: 'NotFound', message: 'services "orders" not found', code: 404 })); return }
      res.writeHead(200, { 'content-type': 'application/json' }); res.end(JSON.stringify({ kind: 'Service', spec: { selector: { app: 'orders' } } }))
      return
    }
    const watch = url.searchParams.get('watch') === '1'
    state.requests.push(watch ? `watch rv=${url.searchParams.get('resourceVersion') ?? ''}` : 'list')
    const status = watch ? state.watchStatus : state.listStatus
    if (status !== 0) {
      res.writeHead(status, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ kind: 'Status', status: 'Failure', reason: status === 403 ? 'Forbidden' : 'InternalError', message: `status ${status} from the fake`, code: status }))
      return
    }
    if (!watch) {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ kind: 'EndpointSliceList', metadata: { resourceVersion: state.resourceVersion }, items: state.slices }))
      return
    }
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' })
    res.flushHeaders()
    open.add(res)
    res.on('close', () => open.delete(res))
  })
  const port = await listen(server)
  const url = `http://127.0.0.1:${port}`
  const dir = mkdtempSync(join(tmpdir(), 'lameduck-k8s-fake-'))
  const kubeconfig = join(dir, 'kubeconfig')
  writeFileSync(kubeconfig, [
    'apiVersion: v1', 'kind: Config', 'current-context: fake',
    'clusters:', '- name: fake', '  cluster:', `    server: ${url}`,
    'contexts:', '- name: fake', '  context:', '    cluster: fake', '    namespace: shop',
    'users: []', ''
  ].join('\n'))
  state = {
    slices: [],
    resourceVersion: '10',
    listStatus: 0,
    watchStatus: 0,
    serviceExists: true,
    patches: [],
    patchStatus: 0,
    acceptToken: undefined,
    tokens: [],
    requests: [],
    url,
    kubeconfig,
    send: (text: string) => { for (const res of open) res.write(text) },
    event: (type: string, object: unknown) => { for (const res of open) res.write(JSON.stringify({ type, object }) + '\n') },
    endWatches: () => { for (const res of open) res.end() },
    get watches () { return open.size },
    close: async () => {
      for (const res of open) res.destroy()
      await close(server)
      rmSync(dir, { recursive: true, force: true })
    }
  }
  return state
}
