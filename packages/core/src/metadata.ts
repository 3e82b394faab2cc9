// Warmup metadata published with an instance. Dubbo's keys carry the same
// values so Dubbo-style consumers ramp the instance too.

export const METADATA_KEYS = {
  registeredAt: 'lameduck.registeredAt',
  warmup: 'lameduck.warmup',
  weight: 'lameduck.weight',
  dubboTimestamp: 'timestamp',
  dubboWarmup: 'warmup',
  dubboWeight: 'weight'
} as const

export const DEFAULT_WEIGHT = 100

export interface WarmupInfo {
  /** ms epoch when the instance registered (provider clock). */
  registeredAt: number
  warmupMs: number
  weight: number
}

export function warmupMetadata (info: WarmupInfo): Record<string, string> {
  const registeredAt = String(Math.trunc(info.registeredAt))
  const warmup = String(Math.trunc(info.warmupMs))
  const weight = String(info.weight)
  return {
    [METADATA_KEYS.registeredAt]: registeredAt,
    [METADATA_KEYS.warmup]: warmup,
    [METADATA_KEYS.weight]: weight,
    [METADATA_KEYS.dubboTimestamp]: registeredAt,
    [METADATA_KEYS.dubboWarmup]: warmup,
    [METADATA_KEYS.dubboWeight]: weight
  }
}

export interface ParsedWarmup {
  /** Undefined when absent or unreadable. */
  registeredAt: number | undefined
  /** 0 when the instance publishes no warmup: it gets its full weight at once. */
  warmupMs: number
  weight: number
  /** Human-readable problems with the metadata; each value fell back to a safe default. */
  problems: string[]
}

/**
 * Reads warmup metadata, preferring lameduck keys over Dubbo's. Bad values never
 * produce a wrong weight silently: they fall back to defaults and are listed in `problems`.
 */
export function parseWarmupMetadata (metadata: Record<string, unknown> | undefined | null): ParsedWarmup {
  const md = metadata ?? {}
  const problems: string[] = []
  const read = (primary: string, fallback: string, check: (n: number) => boolean, rule: string): number | undefined => {
    for (const key of [primary, fallback]) {
      const raw = md[key]
      if (raw === undefined || raw === null || raw === '') continue
      const n = typeof raw === 'number' ? raw : typeof raw === 'string' && /^\s*-?\d+(\.\d+)?\s*$/.test(raw) ? Number(raw) : Number.NaN
      if (Number.isFinite(n) && check(n)) return n
      problems.push(`${key}=${shown(raw)} is not ${rule}; ignored`)
    }
    return undefined
  }
  const registeredAt = read(METADATA_KEYS.registeredAt, METADATA_KEYS.dubboTimestamp, (n) => n > 0, 'a positive ms timestamp')
  const warmupMs = read(METADATA_KEYS.warmup, METADATA_KEYS.dubboWarmup, (n) => n >= 0, 'a non-negative duration in ms') ?? 0
  const weight = read(METADATA_KEYS.weight, METADATA_KEYS.dubboWeight, (n) => n >= 0, 'a non-negative weight') ?? DEFAULT_WEIGHT
  return { registeredAt, warmupMs, weight, problems }
}

/** JSON for the problem text; never throws (BigInt, circular objects), which JSON.stringify would. */
function shown (raw: unknown): string {
  try {
    return JSON.stringify(raw) ?? String(raw)
  } catch {
    return `(${typeof raw})`
  }
}
