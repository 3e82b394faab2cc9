// The server's timers: delta pruning, eviction (with the compensation for late runs),
// the renews-per-minute measurement and the renewal-threshold update.
import type { Timer } from '@lameduck/core'
import type { InstanceRegistry } from './instance-registry.ts'
import type { ResolvedEurekaServerOptions } from './options.ts'

export interface BackgroundTasks {
  /** Runs the eviction task now; returns the evicted APP/id pairs. */
  evictNow(): string[]
  close(): void
}

export function startBackgroundTasks (o: ResolvedEurekaServerOptions, registry: InstanceRegistry): BackgroundTasks {
  const { clock, logger } = o
  const timers = new Set<Timer>()
  let closed = false
  const every = (periodMs: number, task: () => void): void => {
    const run = (): void => {
      timers.delete(timer)
      try { task() } catch (err) { logger.error({ err }, 'eureka: background task failed') }
      if (closed) return
      timer = clock.setTimeout(run, periodMs)
      timer.unref?.()
      timers.add(timer)
    }
    let timer = clock.setTimeout(run, periodMs)
    timer.unref?.()
    timers.add(timer)
  }
  let lastEviction = 0
  const evictNow = (): string[] => {
    const now = clock.now()
    // Late timer runs extend the expiry check, like getCompensationTimeMs().
    const compensation = lastEviction === 0 ? 0 : Math.max(0, now - lastEviction - o.evictionIntervalTimerInMs)
    lastEviction = now
    const evicted = registry.evict(compensation)
    if (evicted.length > 0) logger.info({ evicted }, `eureka: evicted ${evicted.length} expired lease(s)`)
    return evicted
  }
  every(o.deltaRetentionTimerIntervalInMs, () => registry.pruneDeltas())
  every(o.evictionIntervalTimerInMs, evictNow)
  every(o.renewsMeasureIntervalMs, () => registry.rollRenewsMeasurement())
  every(o.renewalThresholdUpdateIntervalMs, () => registry.updateRenewalThreshold())
  return {
    evictNow,
    close () {
      closed = true
      for (const t of timers) clock.clearTimeout(t)
      timers.clear()
    }
  }
}
