// What the balancer takes from an instance's metadata, bounded: weights within a
// stated range, and text (problems, ids) short enough to keep and to log. A registry
// hands over whatever providers registered; one 2 MB value shared by 50 instances
// was copied whole into each one's problems, stats() and warning (about 200 MB).
import { METADATA_KEYS, parseWarmupMetadata, truncateText } from '@lameduck/core'
import type { ParsedWarmup } from '@lameduck/core'

/**
 * Configured weights outside this range are clamped into it (0 stays 0: never picked).
 * The top is Nacos' own maximum, so a weight means the same whatever the registry; the
 * bottom keeps two instances' ratio within a million, far from where float shares erode.
 */
export const WEIGHT_RANGE = { min: 0.01, max: 10_000 } as const

/** Longest text kept for one problem or shown for an instance id (stats and logs). */
export const MAX_TEXT_CHARS = 500

/**
 * A longer metadata value is read cut (and so counts as bad). No usable number is that
 * long (1e-319 written out has 321 characters), and a cut value fits in one problem.
 */
const MAX_VALUE_CHARS = 400

const KEYS: readonly string[] = Object.values(METADATA_KEYS)

/** Core's parseWarmupMetadata over the warmup keys only, each value bounded, and the weight clamped to WEIGHT_RANGE. */
export function readWarmupMetadata (metadata: unknown): ParsedWarmup {
  const view: Record<string, unknown> = {}
  if (typeof metadata === 'object' && metadata !== null) {
    for (const key of KEYS) {
      const value = (metadata as Record<string, unknown>)[key]
      if (value === undefined) continue
      // Objects are named, not serialized: their JSON could be any size.
      view[key] = typeof value === 'string' ? truncateText(value, MAX_VALUE_CHARS) : typeof value === 'object' && value !== null ? `(${Array.isArray(value) ? 'an array' : 'an object'})` : value
    }
  }
  const parsed = parseWarmupMetadata(view)
  const problems = parsed.problems.map((p) => truncateText(p, MAX_TEXT_CHARS))
  let weight = parsed.weight
  if (weight > 0 && (weight < WEIGHT_RANGE.min || weight > WEIGHT_RANGE.max)) {
    const clamped = weight < WEIGHT_RANGE.min ? WEIGHT_RANGE.min : WEIGHT_RANGE.max
    problems.push(`weight ${String(weight)} is outside ${WEIGHT_RANGE.min}..${WEIGHT_RANGE.max}; clamped to ${clamped}`)
    weight = clamped
  }
  return { ...parsed, weight, problems }
}

/** Text from a registration (an id, a host), cut for keeping and logging. */
export function shownText (value: unknown): string {
  return truncateText(String(value), MAX_TEXT_CHARS)
}
