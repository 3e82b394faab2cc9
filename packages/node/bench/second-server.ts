// Instructions of one server mode under callgrind: 3,000 warm-up GETs, counters zeroed, 6,000 measured,
// dumped to <out>.1 (its `summary:` line ÷ 6,000 is per request, every thread). docs/benchmarks.md, 20:20 UTC.
//   node --conditions=@lameduck/source packages/node/bench/second-server.ts bare-otel|bare-otel-second|attach-otel|attach-otel-noadmin <out>
import { fork, execFileSync } from 'node:child_process'
import { once } from 'node:events'
import { Agent, request } from 'node:http'
const [mode, out] = [process.argv[2]!, process.argv[3]!]
const WARM = 3000; const MEASURED = 6000; const CONNECTIONS = 8
const child = fork(new URL('./second-server-srv.ts', import.meta.url), [mode], {
  execPath: 'valgrind',
  execArgv: ['--tool=callgrind', '--quiet', `--callgrind-out-file=${out}`, process.execPath, ...process.execArgv],
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  env: { ...process.env, LAMEDUCK_BENCH_OTEL_COLLECT_MS: '60000' }
})
const [{ port }] = await once(child, 'message') as [{ port: number }]
async function requests (n: number): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS })
  let left = n
  const one = (): Promise<void> => new Promise((resolve, reject) => {
    request({ port, host: '127.0.0.1', path: '/', agent }, (res) => { res.resume(); res.on('end', resolve) }).on('error', reject).end()
  })
  await Promise.all(Array.from({ length: CONNECTIONS }, async () => { while (left-- > 0) await one() }))
  agent.destroy()
}
await requests(WARM)
execFileSync('callgrind_control', ['-z', String(child.pid)])
await requests(MEASURED)
execFileSync('callgrind_control', ['-d', String(child.pid)])
// counters are in the dump file
child.disconnect()
await once(child, 'exit')
