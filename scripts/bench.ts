// `npm run bench`: every benchmark, side by side with its peer in the same run,
// written as a markdown table to bench-results/RESULTS.md (date, machine, ratios).
// Not part of `npm test`.
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { cpus, totalmem } from 'node:os'
import { benchOverhead } from '../packages/fastify/bench/overhead.ts'
import { benchEngineOverhead } from '../packages/node/bench/overhead.ts'
import { benchHookCost } from '../packages/node/bench/hook-cost.ts'
import { benchOtelOverhead } from '../packages/node/bench/otel-overhead.ts'
import { benchGrpcOverhead } from '../packages/grpc/bench/overhead.ts'
import { benchCallgrind, hasValgrind } from '../packages/grpc/bench/callgrind.ts'
import { benchEngineCallgrind } from '../packages/node/bench/callgrind.ts'
import { skipReason as k8sSkipReason } from '../test/k8s/helpers/control-plane.ts'

const sections: string[] = []
const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`
const started = new Date()

console.log('== plugin overhead: hello-world Fastify, bare vs with @lameduck/fastify')
const overhead = await benchOverhead(Number(process.env.BENCH_ROUNDS ?? 5), Number(process.env.BENCH_SECONDS ?? 3))
console.log(overhead.table)
sections.push(`## Plugin overhead\n\nautocannon, 50 connections, server in a child process, ${overhead.rounds} alternating rounds.\n\n${overhead.table}`)

console.log('\n== engine overhead: hello-world Express, node:http and h2c, bare vs with attach() from @lameduck/node')
const engine = await benchEngineOverhead(Number(process.env.BENCH_ROUNDS ?? 5), Number(process.env.BENCH_SECONDS ?? 3))
console.log(`${engine.setup}\n\n${engine.table}`)
sections.push(`## Engine overhead (@lameduck/node)\n\n\`packages/node/bench/overhead.ts\`. ${engine.setup}\n\n${engine.table}`)

console.log('\n== engine overhead with the OpenTelemetry SDK installed: node:http and Express, SDK only vs SDK + attach()')
const otel = await benchOtelOverhead(Number(process.env.BENCH_ROUNDS ?? 5), Number(process.env.BENCH_SECONDS ?? 3))
console.log(`${otel.setup}\n\n${otel.table}`)
// The goal (≥ 0.98) sits inside the ±5 % req/s swings here: instructions per request settle it, where valgrind is.
const engineNoise = process.env.BENCH_CALLGRIND === '1' || [...Object.values(engine.ratios), ...Object.values(otel.ratios)].some((r) => Math.abs(r.rps - 1) <= 0.05)
const engineCallgrind = engineNoise && hasValgrind() ? await benchEngineCallgrind() : null
if (engineCallgrind !== null) console.log(`${engineCallgrind.setup}\n\n${engineCallgrind.table}`)
const engineCallgrindText = engineCallgrind !== null ? `\n\nInstructions per request (\`packages/node/bench/callgrind.ts\`): ${engineCallgrind.setup}\n\n${engineCallgrind.table}` : engineNoise ? '\n\nInstructions per request: skipped, valgrind not found (apt-get install valgrind).' : ''
sections.push(`## Engine overhead with the OpenTelemetry SDK installed\n\n\`packages/node/bench/otel-overhead.ts\`. ${otel.setup}\n\n${otel.table}${engineCallgrindText}`)

console.log('\n== gRPC overhead: a unary grpc-js server, bare vs under attachGrpc() from @lameduck/grpc')
const grpcBench = await benchGrpcOverhead(Number(process.env.BENCH_ROUNDS ?? 5), Number(process.env.BENCH_SECONDS ?? 3))
console.log(`${grpcBench.setup}\n\n${grpcBench.table}`)
// Within ±5 % the calls/s ratio is the machine's noise: count instructions per call instead, where valgrind is.
const grpcNoise = process.env.BENCH_CALLGRIND === '1' || Math.abs(grpcBench.cpsRatio - 1) <= 0.05
const grpcCallgrind = grpcNoise && hasValgrind() ? await benchCallgrind() : null
if (grpcCallgrind !== null) console.log(`${grpcCallgrind.setup}\n\n${grpcCallgrind.table}`)
const grpcCallgrindText = grpcCallgrind !== null ? `\n\nInstructions per call (the ratio is within ±5 %, the machine's noise): ${grpcCallgrind.setup}\n\n${grpcCallgrind.table}` : grpcNoise ? '\n\nInstructions per call: skipped, valgrind not found (apt-get install valgrind).' : ''
sections.push(`## gRPC overhead (@lameduck/grpc)\n\n\`packages/grpc/bench/overhead.ts\`. ${grpcBench.setup}\n\n${grpcBench.table}${grpcCallgrindText}`)

console.log('\n== engine cost per request without the network: node:http, Express and h2c over in-memory connections')
const hook = await benchHookCost(Number(process.env.BENCH_ROUNDS ?? 7))
console.log(`${hook.setup}\n\n${hook.table}`)
sections.push(`## Engine cost per request, without the network\n\n\`packages/node/bench/hook-cost.ts\`. ${hook.setup}\n\n${hook.table}`)

// Package benchmarks that print their own markdown (balancer, rollout lab).
for (const script of ['packages/balancer/bench/index.ts', 'packages/devkit/bench/rollout.ts']) {
  if (!existsSync(script)) continue
  console.log(`\n== ${script}`)
  const out = execFileSync(process.execPath, ['--expose-gc', '--conditions=@lameduck/source', script], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 * 2 ** 20 })
  console.log(out)
  sections.push(out.trim())
}

// The rollout lab on the real Eureka server with Java and Node consumers (test/real): needs a JDK and Maven.
const missing = ['java', 'mvn'].filter((tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0)
const realSkip = process.env.LAMEDUCK_REAL === 'skip' ? 'LAMEDUCK_REAL=skip' : missing.length > 0 ? `${missing.join(' and ')} not on PATH (it needs a JDK 17+ and Maven)` : null
if (realSkip !== null) {
  console.log(`\n== test/real/rollout-table.ts skipped: ${realSkip}`)
  sections.push(`## Rollout lab on the real Eureka server\n\nSkipped: ${realSkip}.`)
} else {
  console.log('\n== test/real/rollout-table.ts (the real Eureka server; JVMs, a few minutes)')
  execFileSync('bash', ['test/real/build.sh'], { stdio: 'inherit' })
  const out = execFileSync(process.execPath, ['--conditions=@lameduck/source', 'test/real/rollout-table.ts', process.env.BENCH_REAL_RUNS ?? '3'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 * 2 ** 20 })
  console.log(out)
  sections.push(out.trim())
}

// The Kubernetes API section (test/k8s): only where the built control plane is cached (test/k8s/install.sh; no build here).
const k8sSkip = process.env.LAMEDUCK_K8S === 'skip' ? 'LAMEDUCK_K8S=skip' : k8sSkipReason() ?? null
if (k8sSkip !== null) {
  console.log(`\n== test/k8s/bench.ts skipped: ${k8sSkip}`)
  sections.push(`## Kubernetes API (test/k8s/bench.ts)\n\nSkipped: ${k8sSkip}.`)
} else {
  console.log('\n== test/k8s/bench.ts (a real kube-apiserver and kube-controller-manager on loopback)')
  const out = execFileSync(process.execPath, ['--expose-gc', '--conditions=@lameduck/source', 'test/k8s/bench.ts', '--runs', process.env.BENCH_K8S_RUNS ?? '40'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 * 2 ** 20 })
  console.log(out)
  sections.push(out.trim())
}

mkdirSync('bench-results', { recursive: true })
const doc = `# lameduck benchmarks\n\n${started.toISOString()} on ${machine}.\n\n${sections.join('\n\n')}\n`
writeFileSync('bench-results/RESULTS.md', doc)
console.log('\nwrote bench-results/RESULTS.md')
