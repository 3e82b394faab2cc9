// Warmup curves as pure functions. Both return an effective weight; consumers
// pick instances in proportion to it.

/**
 * Dubbo's linear warmup (AbstractLoadBalance.calculateWarmupWeight + getWeight):
 * the weight grows from 1 to `weight` over `warmupMs`, truncated to an integer.
 * A negative uptime (clock skew) gives 1; once uptime >= warmup the full weight.
 */
export function linearWarmupWeight (uptimeMs: number, warmupMs: number, weight: number): number {
  if (weight <= 0) return 0
  if (uptimeMs < 0) return Math.min(1, weight)
  if (warmupMs <= 0 || uptimeMs >= warmupMs) return weight
  const ww = Math.trunc(uptimeMs / (warmupMs / weight))
  // Dubbo's floor is 1; a fractional weight below 1 is its own floor.
  return ww < 1 ? Math.min(1, weight) : Math.min(ww, weight)
}

export interface SlowStartOptions {
  /** Curve shape: > 1 ramps faster early, < 1 slower. Envoy's default is 1; <= 0 or NaN means 1. */
  aggression?: number
  /** Floor as a percentage of the weight. Envoy's default is 10. */
  minWeightPercent?: number
}

/**
 * Envoy's slow start (EdfLoadBalancerBase::applySlowStartFactor):
 * `weight x max(minWeightPercent, (max(t, 1 ms) / window)^(1/aggression))` while t < window.
 */
export function slowStartWeight (elapsedMs: number, windowMs: number, weight: number, options: SlowStartOptions = {}): number {
  if (weight <= 0) return 0
  if (windowMs <= 0 || elapsedMs >= windowMs) return weight
  let aggression = options.aggression ?? 1
  if (!(aggression > 0)) aggression = 1
  const min = (options.minWeightPercent ?? 10) / 100
  const timeFactor = Math.max(elapsedMs, 1) / windowMs
  return weight * Math.max(min, timeFactor ** (1 / aggression))
}

export type WarmupCurve = 'linear' | 'slow-start'
