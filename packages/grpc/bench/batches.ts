// Consecutive measured batches in one server process under callgrind: where a count's phase
// matters (the GC's cycles), the batches show it. One process per side, run side by side.
//   node --conditions=@lameduck/source packages/grpc/bench/batches.ts [--warm 20000] [--batch 6000] [--batches 8]
import { parseArgs } from 'node:util'
import { callgrindServer, hasValgrind } from '@lameduck/test-utils'
import { unaryCalls } from './callgrind.ts'
import type { BenchMode } from './server.ts'

const { values } = parseArgs({ options: { warm: { type: 'string', default: '20000' }, batch: { type: 'string', default: '6000' }, batches: { type: 'string', default: '8' } } })
const [WARM, BATCH, BATCHES] = [Number(values.warm), Number(values.batch), Number(values.batches)]
const fmt = (n: number): string => Math.round(n).toLocaleString('en-US')

/** Instructions per call (every thread) of each batch after the warm-up. */
async function batches (mode: BenchMode): Promise<number[]> {
  const server = await callgrindServer(new URL('./overhead.ts', import.meta.url), ['--serve', mode])
  const load = unaryCalls(server.port)
  try {
    await load.run(WARM)
    const out: number[] = []
    for (let i = 0; i < BATCHES; i++) {
      server.zero()
      await load.run(BATCH)
      out.push(server.instructions() / BATCH)
    }
    return out
  } finally {
    await load.close()
    await server.stop()
  }
}

if (!hasValgrind()) {
  console.log('valgrind not found (apt-get install valgrind)')
} else {
  const sides = await Promise.all((['bare', 'attach'] as const).map(async (mode) => [mode, await batches(mode)] as const))
  for (const [mode, counts] of sides) console.log(`${mode}: ${counts.map(fmt).join('; ')} (mean ${fmt(counts.reduce((a, b) => a + b, 0) / counts.length)})`)
}
