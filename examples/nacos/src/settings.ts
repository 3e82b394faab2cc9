// One knob for the whole example: SCALE multiplies the Nacos intervals that make
// up the window, so the server, the providers and the consumer agree on them.
// SCALE=1 runs the production values (an 11.5 s window).

/** Nacos defaults the example scales down. */
export const PRODUCTION = {
  /** Server: cacheMillis in every list answer = how often v1 clients poll. */
  cacheMillis: 10_000,
  /** Server: a change reaches subscribers by UDP push this much later (Nacos 2.x/3.x; 1.x: 1000). */
  pushDelayMs: 500,
  /** The `nacos` preset's margin: request latency and the SDK's 1 s first poll after a subscribe. */
  marginMs: 1_000,
  /** The plugin's default warmup. */
  warmupMs: 120_000
}

export const SERVICE = 'orders'

export interface Settings {
  scale: number
  /** NACOS_SERVER, default 127.0.0.1:8848. */
  serverList: string
  cacheMillis: number
  pushDelayMs: number
  marginMs: number
  warmupMs: number
  /** MARGIN_MS, not scaled, on top of marginMs: slack for timer jitter on a busy machine. Default 0. */
  extraMarginMs: number
}

export const DEFAULT_SCALE = 0.5

export function readSettings (env: NodeJS.ProcessEnv = process.env): Settings {
  const scale = env.SCALE === undefined || env.SCALE === '' ? DEFAULT_SCALE : Number(env.SCALE)
  if (!Number.isFinite(scale) || scale <= 0) throw new Error(`SCALE must be a positive number (1 = production intervals, 0.5 = twice as fast), got '${env.SCALE}'`)
  const extraMarginMs = Number(env.MARGIN_MS || 0)
  if (!Number.isFinite(extraMarginMs) || extraMarginMs < 0) throw new Error(`MARGIN_MS must be a number of ms ≥ 0, got '${env.MARGIN_MS}'`)
  const scaled = (ms: number): number => Math.round(ms * scale)
  return {
    scale,
    serverList: env.NACOS_SERVER || '127.0.0.1:8848',
    cacheMillis: scaled(PRODUCTION.cacheMillis),
    pushDelayMs: scaled(PRODUCTION.pushDelayMs),
    marginMs: scaled(PRODUCTION.marginMs),
    warmupMs: scaled(PRODUCTION.warmupMs),
    extraMarginMs
  }
}

/** `HH:MM:SS.mmm`, the prefix of every line the example prints. */
export function clock (): string {
  return new Date().toISOString().slice(11, 23)
}
