// One measurement of one contender in a fresh process, for `benchHttp({ isolate: true })`:
// warm for 1 s, measure, send the result to the parent, exit.
//   node bench/http-child.ts <contender> <ports as JSON> <concurrency> <seconds>
import { drive, openContender } from './http.ts'
import type { Contender } from './http.ts'

const [name, ports, concurrency, seconds] = process.argv.slice(2)
const c = openContender(name as Contender, JSON.parse(ports!) as number[])
await drive(c.dispatcher, c.origin, Number(concurrency), 1_000, c.headers)
const result = await drive(c.dispatcher, c.origin, Number(concurrency), Number(seconds) * 1_000, c.headers)
process.send!(result)
await c.dispatcher.close()
process.disconnect()
