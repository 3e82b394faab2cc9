import { EXIT, type Command, type CommandContext } from '../command.ts'
import { formatSeconds, parseFlags, secondsFlag, stringFlag, UsageError, urlFlag } from '../args.ts'
import { call, createAgent, networkFailure } from '../http.ts'
import { sleep, systemClock } from '@lameduck/core'
import { printable } from './prestop-wire.ts'

export const DEFAULT_READY_URL = 'http://127.0.0.1:3000/health/ready'
const LABEL = 'lameduck wait-ready'

const help = `Usage: lameduck wait-ready [--url URL] [--timeout S] [--interval S]

Blocks until the app's readiness route answers 200, like Istio's
\`pilot-agent wait\`. Use it in a postStart hook: kubelet starts the next
container of the pod only when this one's postStart returned, so containers
listed after the app start once the app can serve.

Options:
  --url URL       readiness URL (default ${DEFAULT_READY_URL},
                  the plugin's routes.ready on the app's port)
  --timeout S     give up after S seconds; 0 waits forever (default 60)
  --interval S    pause between attempts (default 0.5)
  -h, --help      show this help

Exit codes:
  0  ready (200)
  1  the app answered but did not turn ready before --timeout
  2  bad flags
  3  nothing answered before --timeout (app not listening, wrong --url)

Example (container spec):
  lifecycle:
    postStart:
      exec:
        command: ["lameduck", "wait-ready", "--timeout", "120"]
`

async function run (ctx: CommandContext): Promise<number> {
  const { values } = parseFlags(ctx.argv, {
    url: { type: 'string' },
    timeout: { type: 'string' },
    interval: { type: 'string' }
  })
  const url = urlFlag('url', stringFlag(values, 'url') ?? DEFAULT_READY_URL)
  const timeoutMs = secondsFlag(values, 'timeout', 60)
  const intervalMs = secondsFlag(values, 'interval', 0.5)
  if (intervalMs === 0) throw new UsageError('--interval must be more than 0 seconds, e.g. --interval 0.5')
  const requestTimeoutMs = Math.min(5_000, Math.max(1_000, intervalMs))

  const started = Date.now()
  const agent = createAgent()
  let answered = false
  let last = ''
  const note = (what: string): void => {
    if (what === last) return
    last = what
    ctx.stdout.write(`${LABEL}: not ready yet: ${what}\n`)
  }
  try {
    for (;;) {
      if (ctx.signal.aborted) {
        ctx.stderr.write(`${LABEL}: interrupted before ${url.href} was ready (last: ${last || 'no answer yet'})\n`)
        return EXIT.FAILED
      }
      try {
        const res = await call(agent, url, { signal: ctx.signal, timeoutMs: requestTimeoutMs })
        answered = true
        if (res.status === 200) {
          ctx.stdout.write(`${LABEL}: ready after ${formatSeconds(Date.now() - started)} (${url.href})\n`)
          return EXIT.OK
        }
        const state = typeof res.json?.state === 'string' ? ` (state '${printable(res.json.state)}')` : ''
        note(`${res.status}${state}${res.status === 404 ? `: no route at ${url.pathname}; is --url the plugin's routes.ready path?` : ''}`)
      } catch (err) {
        if (ctx.signal.aborted) continue
        note(networkFailure(err, url).reason)
      }
      const elapsed = Date.now() - started
      if (timeoutMs > 0 && elapsed >= timeoutMs) {
        const hint = answered
          ? 'the app answers but is not serving yet: check its readiness checks, registry and sidecar in the admin /status'
          : 'nothing answered: is the app running, and is --url its port and readiness path?'
        ctx.stderr.write(`${LABEL}: ${url.href} not ready after ${formatSeconds(timeoutMs)} (last: ${last}): ${hint}\n`)
        return answered ? EXIT.FAILED : EXIT.UNREACHABLE
      }
      const pause = timeoutMs > 0 ? Math.min(intervalMs, timeoutMs - elapsed) : intervalMs
      await sleep(systemClock, pause, ctx.signal, { resolveOnAbort: true })
    }
  } finally {
    await agent.destroy()
  }
}

export const waitReady: Command = { name: 'wait-ready', summary: 'postStart/startup: block until the app\'s /health/ready answers 200', help, run }
