// Renders the app's drain progress from its admin /status: a redrawn bar on a
// terminal, one plain line per update otherwise (kubelet keeps hook output as
// plain text, and a redrawn line would be unreadable there).
import { DRAIN_PHASE_INFO, type DrainProgress, type LifecycleStatus } from '@lameduck/core'
import { formatSeconds } from './args.ts'

/** The admin /status answer as read off the wire: the CLI reads a few fields, each maybe missing. */
export type StatusView = Pick<LifecycleStatus, 'state'> & {
  inflight?: number
  window?: { totalMs?: number }
  drain?: Partial<DrainProgress> | null
}

/** Whether the drain is in a phase that counts the window down (unknown phases from newer apps: no). */
function countsDown (phase: string | undefined): boolean {
  return phase !== undefined && Object.hasOwn(DRAIN_PHASE_INFO, phase) && DRAIN_PHASE_INFO[phase as keyof typeof DRAIN_PHASE_INFO].countdown
}

export interface ProgressOptions {
  stream: NodeJS.WritableStream & { isTTY?: boolean, columns?: number }
  label: string
  now?: () => number
}

export interface ProgressRenderer {
  readonly tty: boolean
  show(status: StatusView): void
  /** Removes the bar (TTY) so the final line starts clean. */
  clear(): void
}

export function describeStatus (status: StatusView, now: number): string {
  const parts: string[] = [status.state]
  const drain = status.drain
  if (status.state === 'draining' && drain) {
    const total = status.window?.totalMs ?? 0
    if (drain.phase === 'deregistering') {
      const d = drain.deregistration
      parts.push(`deregistration not confirmed yet${d ? ` (${d.attempts} attempts${d.lastError ? `, last error: ${d.lastError}` : ''})` : ''}`)
    } else if (countsDown(drain.phase)) {
      const left = Math.max(0, (drain.windowEndsAt ?? now) - now)
      // An observed term not over yet: the window waits for it, the budget bounds the wait.
      const waiting = (drain.windowTerms ?? []).find((t) => t.by === 'pending' && t.term !== 'registry')
      parts.push(waiting === undefined ? `window ${formatSeconds(roundTenth(left))} left of ${formatSeconds(total)}` : `window waits for ${waiting.detail} (at most ${formatSeconds(roundTenth(left))} more)`)
      if (drain.earlyOfflinePending) parts.push(`early offline pending: ${drain.earlyOfflinePending}`)
    } else if (drain.phase !== undefined && Object.hasOwn(DRAIN_PHASE_INFO, drain.phase)) {
      parts.push(DRAIN_PHASE_INFO[drain.phase as keyof typeof DRAIN_PHASE_INFO].summary)
    }
  }
  if (status.inflight !== undefined) parts.push(`${status.inflight} in flight`)
  if (drain?.requestsWhileDraining !== undefined) parts.push(`${drain.requestsWhileDraining} requests while draining`)
  return parts.join(' · ')
}

function roundTenth (ms: number): number {
  return Math.ceil(ms / 100) * 100
}

function fraction (status: StatusView, now: number): number {
  const d = status.drain
  if (status.state !== 'draining' || !d) return status.state === 'offline' ? 1 : 0
  if (!countsDown(d.phase) && d.phase !== 'deregistering') return 1
  const start = d.startedAt ?? now
  const end = d.windowEndsAt ?? now
  if (end <= start) return 1
  return Math.min(1, Math.max(0, (now - start) / (end - start)))
}

export function createProgress (options: ProgressOptions): ProgressRenderer {
  const { stream, label } = options
  const now = options.now ?? Date.now
  const tty = stream.isTTY === true
  let drawn = false
  return {
    tty,
    show (status) {
      const t = now()
      const text = describeStatus(status, t)
      if (!tty) {
        stream.write(`${label}: ${text}\n`)
        return
      }
      const columns = stream.columns ?? 80
      const width = Math.max(10, Math.min(30, columns - text.length - label.length - 8))
      const filled = Math.round(fraction(status, t) * width)
      const bar = `[${'█'.repeat(filled)}${'░'.repeat(width - filled)}]`
      stream.write(`\r${label} ${bar} ${text}`.slice(0, columns + 1) + '\x1b[K')
      drawn = true
    },
    clear () {
      if (tty && drawn) stream.write('\r\x1b[K')
      drawn = false
    }
  }
}
