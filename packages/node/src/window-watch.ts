import type { EarlyOfflineMonitor, Lifecycle, Timer } from '@lameduck/core'

/**
 * Calls `onEnd` once the running drain's propagation window is over: at its
 * end (which moves when the registry confirms the deregistration), when the
 * early-offline monitor ends it sooner, or at the latest when the drain leaves
 * the window phase. Each phase the drain enters is a re-check: the confirmation
 * (entering 'window') moves the end from the shutdown budget's bound to the
 * confirmation + the window, and leaving it ends the window then, before the
 * sidecar steps run. On the lifecycle's clock. Returns the canceller.
 */
export function watchWindowEnd (lifecycle: Lifecycle, early: EarlyOfflineMonitor | undefined, onEnd: () => void): () => void {
  const clock = lifecycle.clock
  let timer: Timer | null = null
  let done = false
  const stop = (): void => {
    done = true
    if (timer !== null) clock.clearTimeout(timer)
    timer = null
    unwatch?.()
    lifecycle.off('phase', onPhase)
  }
  const check = (): void => {
    if (done) return
    if (timer !== null) clock.clearTimeout(timer)
    timer = null
    const drain = lifecycle.drain
    if (drain === null) { stop(); return } // cancelled by online(), or already over
    const now = clock.now()
    const over = drain.phase === 'sidecar' || drain.phase === 'inflight' || now >= drain.windowEndsAt ||
      (early !== undefined && drain.deregisteredAt !== null && early.pending(now) === null)
    if (over) { stop(); onEnd(); return }
    timer = clock.setTimeout(check, Math.max(1, drain.windowEndsAt - now))
    timer.unref?.()
  }
  const onPhase = (): void => { check() }
  const unwatch = early?.onChange(check)
  lifecycle.on('phase', onPhase)
  check()
  return stop
}
