// A real Kubernetes control plane on loopback for test/k8s: etcd (Debian's etcd-server),
// kube-apiserver and kube-controller-manager v1.34.4 (built by test/k8s/install.sh into
// ~/.cache/lameduck/k8s-<version>/bin). Token auth and RBAC, service-account keys made at
// start with node:crypto, `--watch-cache=false` (Debian's etcd 3.4 cannot answer the watch
// cache's progress requests: after an API-server restart the controller fell behind by 39 s
// and more). Every process is stopped by its PID.
import { spawn, type ChildProcess } from 'node:child_process'
import { generateKeyPairSync, randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync, createWriteStream } from 'node:fs'
import { createServer, type AddressInfo } from 'node:net'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import https from 'node:https'
import http from 'node:http'

export const K8S_VERSION = process.env.LAMEDUCK_K8S_VERSION ?? '1.34.4'
export const K8S_BIN = join(process.env.LAMEDUCK_CACHE ?? join(homedir(), '.cache', 'lameduck'), `k8s-${K8S_VERSION}`, 'bin')

/** Why the control plane cannot run here, or undefined when it can (install.sh ran). */
export function skipReason (): string | undefined {
  for (const b of ['kube-apiserver', 'kube-controller-manager']) {
    if (!existsSync(join(K8S_BIN, b))) return `${join(K8S_BIN, b)} is missing: run bash test/k8s/install.sh (needs Go)`
  }
  if (!['/usr/bin/etcd', '/usr/local/bin/etcd'].some((p) => existsSync(p))) return 'etcd is not installed: apt-get install -y etcd-server'
  return undefined
}

/** A port free right now. The servers here take their port from the command line (kube-apiserver has no port 0). */
async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

export interface ApiAnswer { status: number, body: any }

export interface ControlPlane {
  /** https://127.0.0.1:<port> */
  server: string
  apiPort: number
  etcdUrl: string
  dir: string
  /** PEM of the CA that signed the API server's certificate. */
  ca: Buffer
  /** A kubeconfig with the given user's token and `server` (default: the API server itself). */
  kubeconfig: (user: 'admin' | 'reader' | 'nobody', server?: string) => string
  /** A request as the admin (system:masters); a PATCH is a merge patch unless `contentType` says otherwise. */
  api: (method: string, path: string, body?: unknown, user?: 'admin' | 'reader' | 'nobody', contentType?: string) => Promise<ApiAnswer>
  /** Kills the API server (SIGKILL) and resolves once it exited. */
  killApiServer: () => Promise<void>
  /** Starts the API server again on the same port and waits for /readyz. */
  startApiServer: () => Promise<void>
  /** The current etcd revision, and a compaction up to it (older resourceVersions then answer 410 Gone). */
  compactEtcd: () => Promise<number>
  stop: () => Promise<void>
  logs: () => string
}

const TOKENS = { admin: randomBytes(16).toString('hex'), reader: randomBytes(16).toString('hex'), nobody: randomBytes(16).toString('hex') }

function waitExit (child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => child.once('exit', () => resolve()))
}

async function stopByPid (child: ChildProcess | undefined): Promise<void> {
  if (child?.pid === undefined) return
  const exited = waitExit(child)
  try { process.kill(child.pid, 'SIGTERM') } catch { return }
  const t = setTimeout(() => { try { process.kill(child.pid!, 'SIGKILL') } catch {} }, 5_000)
  await exited
  clearTimeout(t)
}

export async function startControlPlane (): Promise<ControlPlane> {
  const dir = mkdtempSync(join(tmpdir(), 'lameduck-k8s-'))
  const logPath = join(dir, 'control-plane.log')
  const log = createWriteStream(logPath)
  const children: ChildProcess[] = []
  const run = (bin: string, args: string[], name: string): ChildProcess => {
    const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] })
    child.stdout!.on('data', (c: Buffer) => log.write(`[${name}] ${c.toString()}`))
    child.stderr!.on('data', (c: Buffer) => log.write(`[${name}] ${c.toString()}`))
    children.push(child)
    return child
  }

  // etcd on loopback, its own data dir.
  const [etcdPort, peerPort, apiPort] = [await freePort(), await freePort(), await freePort()]
  const etcdUrl = `http://127.0.0.1:${etcdPort}`
  const etcd = run('etcd', [
    '--name', 'default', '--data-dir', join(dir, 'etcd'),
    '--listen-client-urls', etcdUrl, '--advertise-client-urls', etcdUrl,
    '--listen-peer-urls', `http://127.0.0.1:${peerPort}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${peerPort}`,
    '--initial-cluster', `default=http://127.0.0.1:${peerPort}`, '--log-level', 'warn'
  ], 'etcd')
  const etcdCall = async (path: string, body: unknown): Promise<any> => {
    const res = await fetch(`${etcdUrl}${path}`, { method: 'POST', body: JSON.stringify(body) })
    return await res.json()
  }
  await until(async () => { try { return (await fetch(`${etcdUrl}/health`)).ok } catch { return false } }, 'etcd /health', () => etcd)

  // Service-account keys, tokens (token,user,uid,"groups"), the API server's cert dir.
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  writeFileSync(join(dir, 'sa.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }))
  writeFileSync(join(dir, 'sa.pub'), publicKey.export({ type: 'spki', format: 'pem' }))
  writeFileSync(join(dir, 'tokens.csv'), [
    `${TOKENS.admin},admin,admin,"system:masters"`,
    `${TOKENS.reader},reader,reader`,
    `${TOKENS.nobody},nobody,nobody`
  ].join('\n') + '\n')
  const certDir = join(dir, 'certs')
  let apiServer: ChildProcess | undefined
  const server = `https://127.0.0.1:${apiPort}`
  let ca: Buffer = Buffer.alloc(0)
  const startApiServer = async (): Promise<void> => {
    apiServer = run(join(K8S_BIN, 'kube-apiserver'), [
      '--etcd-servers', etcdUrl, '--bind-address', '127.0.0.1', '--secure-port', String(apiPort), '--cert-dir', certDir,
      '--advertise-address', '127.0.0.1', '--endpoint-reconciler-type', 'none',
      '--token-auth-file', join(dir, 'tokens.csv'), '--authorization-mode', 'RBAC',
      '--service-account-key-file', join(dir, 'sa.pub'), '--service-account-signing-key-file', join(dir, 'sa.key'),
      '--service-account-issuer', 'https://kubernetes.default.svc', '--service-cluster-ip-range', '10.96.0.0/16',
      '--watch-cache=false', '--enable-priority-and-fairness=false', '--profiling=false'
    ], 'kube-apiserver')
    const child = apiServer
    await until(() => existsSync(join(certDir, 'apiserver.crt')), 'the API server certificate', () => child)
    ca = readFileSync(join(certDir, 'apiserver.crt'))
    await until(async () => (await request(server, ca, TOKENS.admin, 'GET', '/readyz').catch(() => ({ status: 0 }))).status === 200, 'kube-apiserver /readyz', () => child)
  }
  await startApiServer()

  const kubeconfig = (user: 'admin' | 'reader' | 'nobody', at = server): string => {
    const path = join(dir, `kubeconfig-${user}-${at.replace(/\W+/g, '_')}.yaml`)
    writeFileSync(path, JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'lab', cluster: { server: at, 'certificate-authority-data': ca.toString('base64') } }],
      users: [{ name: user, user: { token: TOKENS[user] } }],
      contexts: [{ name: 'lab', context: { cluster: 'lab', user } }],
      'current-context': 'lab'
    }, null, 2))
    return path
  }

  const cm = run(join(K8S_BIN, 'kube-controller-manager'), [
    '--kubeconfig', kubeconfig('admin'), '--controllers', 'endpointslice,endpointslicemirroring,namespace,garbagecollector,serviceaccount',
    '--leader-elect=false', '--bind-address', '127.0.0.1', '--secure-port', '0', '--use-service-account-credentials=false'
  ], 'kube-controller-manager')

  const api = (method: string, path: string, body?: unknown, user: 'admin' | 'reader' | 'nobody' = 'admin', contentType?: string): Promise<ApiAnswer> => request(server, ca, TOKENS[user], method, path, body, contentType)
  // The controller is ready once it made the default namespace's service account.
  await until(async () => (await api('GET', '/api/v1/namespaces/default/serviceaccounts/default')).status === 200, 'the default service account (controller-manager up)', () => cm)

  return {
    server,
    apiPort,
    etcdUrl,
    dir,
    get ca () { return ca },
    kubeconfig,
    api,
    killApiServer: async () => {
      const child = apiServer!
      const exited = waitExit(child)
      process.kill(child.pid!, 'SIGKILL')
      await exited
    },
    startApiServer,
    compactEtcd: async () => {
      const range = await etcdCall('/v3/kv/range', { key: Buffer.from('/').toString('base64') })
      const revision = Number(range.header.revision)
      await etcdCall('/v3/kv/compaction', { revision: String(revision), physical: true })
      return revision
    },
    stop: async () => {
      for (const child of children.reverse()) await stopByPid(child)
      log.end()
      if (process.env.LAMEDUCK_K8S_KEEP === undefined) rmSync(dir, { recursive: true, force: true })
    },
    logs: () => { try { return readFileSync(logPath, 'utf8') } catch { return '' } }
  }
}

async function until (fn: () => boolean | Promise<boolean>, what: string, child: () => ChildProcess, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (await fn()) return
    const c = child()
    if (c.exitCode !== null || c.signalCode !== null) throw new Error(`${what}: the process exited (${c.exitCode ?? c.signalCode})`)
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** One HTTPS request with a bearer token; JSON in and out. */
export function request (server: string, ca: Buffer, token: string, method: string, path: string, body?: unknown, contentType?: string): Promise<ApiAnswer> {
  const url = new URL(path, server)
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body))
  const mod = url.protocol === 'https:' ? https : http
  return new Promise((resolve, reject) => {
    const req = mod.request(url, {
      method,
      ca,
      headers: {
        authorization: `Bearer ${token}`,
        accept: 'application/json',
        ...(payload === undefined ? {} : { 'content-type': contentType ?? (method === 'PATCH' ? 'application/merge-patch+json' : 'application/json'), 'content-length': payload.length })
      }
    }, (res) => {
      const parts: Buffer[] = []
      res.on('data', (c: Buffer) => parts.push(c))
      res.on('end', () => {
        const text = Buffer.concat(parts).toString()
        let parsed: unknown = text
        try { parsed = JSON.parse(text) } catch {}
        resolve({ status: res.statusCode ?? 0, body: parsed })
      })
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(payload)
  })
}
