// Real Prometheus and promtool (Debian's `prometheus` package, unpacked outside the repo by
// test/real/prometheus/install.sh) for the scrape test: start a server on a port it binds itself
// (port 0, read back from /proc), query it, stop it.
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { readFileSync, readdirSync, readlinkSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { until } from '@lameduck/test-utils'

/** The directory holding `prometheus` and `promtool`, or why they cannot be had here. */
export function installPrometheus (): { bin: string } | { skip: string } {
  try {
    const out = execFileSync('bash', ['test/real/prometheus/install.sh'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
    return { bin: out.trim().split('\n').at(-1)! }
  } catch (err) {
    const e = err as { status?: number, stderr?: string }
    if (e.status === 3) return { skip: `Prometheus cannot be installed here: ${e.stderr?.trim() ?? ''}` }
    throw err
  }
}

/** Runs promtool with `input` on stdin; resolves with its exit code and output (never rejects on a non-zero exit). */
export async function promtool (bin: string, args: string[], input?: string): Promise<{ code: number, output: string }> {
  return await new Promise((resolve, reject) => {
    const child = execFile(join(bin, 'promtool'), args, { encoding: 'utf8' }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : -1
      if (code === -1) { reject(err); return }
      resolve({ code, output: stdout + stderr })
    })
    child.stdin?.end(input ?? '')
  })
}

/** The TCP ports a process listens on, from its socket inodes and /proc/net/tcp{,6}. */
export function listeningPorts (pid: number): number[] {
  const inodes = new Set<string>()
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))
      if (m !== null) inodes.add(m[1]!)
    } catch {}
  }
  const ports: number[] = []
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/)
      if (f.length < 10 || f[3] !== '0A' || !inodes.has(f[9]!)) continue
      ports.push(parseInt(f[1]!.split(':')[1]!, 16))
    }
  }
  return ports
}

export interface RealPrometheus { url: string, query(expr: string): Promise<PromResult>, api<T>(path: string): Promise<T>, stop(): Promise<void>, log(): string }
export interface PromResult { status: string, error?: string, data?: { resultType: string, result: Array<{ metric: Record<string, string>, value: [number, string] }> } }

/** Starts Prometheus with `config` (YAML text) and the rule files given (name → YAML text). */
export async function startPrometheus (bin: string, config: string, rules: Record<string, string> = {}): Promise<RealPrometheus> {
  const dir = mkdtempSync(join(tmpdir(), 'lameduck-prom-'))
  for (const [name, text] of Object.entries(rules)) writeFileSync(join(dir, name), text)
  writeFileSync(join(dir, 'prometheus.yml'), config)
  let log = ''
  const child: ChildProcess = spawn(join(bin, 'prometheus'), [
    `--config.file=${join(dir, 'prometheus.yml')}`,
    `--storage.tsdb.path=${join(dir, 'data')}`,
    '--web.listen-address=127.0.0.1:0',
    '--log.level=warn'
  ], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] })
  child.stdout?.on('data', (d: Buffer) => { log += d.toString() })
  child.stderr?.on('data', (d: Buffer) => { log += d.toString() })
  const exited = new Promise<void>((resolve) => child.once('exit', () => { resolve() }))
  let port = 0
  await until(() => {
    if (child.exitCode !== null) throw new Error(`prometheus exited ${child.exitCode}: ${log}`)
    port = listeningPorts(child.pid!)[0] ?? 0
    return port !== 0
  }, 'prometheus listening', { timeoutMs: 60_000 })
  const url = `http://127.0.0.1:${port}`
  await until(async () => (await fetch(`${url}/-/ready`).catch(() => null))?.ok === true, 'prometheus ready', { timeoutMs: 60_000 })
  const api = async <T>(path: string): Promise<T> => await (await fetch(`${url}${path}`)).json() as T
  return {
    url,
    api,
    query: async (expr) => await api<PromResult>(`/api/v1/query?query=${encodeURIComponent(expr)}`),
    log: () => log,
    stop: async () => {
      child.kill('SIGTERM')
      await exited
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
