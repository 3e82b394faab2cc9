// The app's own settings the doctor reads beside its window, from the same
// places: the pod template's (or workload's) lameduck.dev/* annotations, else
// the app container's LAMEDUCK_* env. `lameduck plan` writes the annotations.
import { READINESS_WHILE_DRAINING, type ReadinessWhileDraining } from '@lameduck/core'
import { MAX_FLAG_MS } from '../args.ts'
import { isRecord, type Path } from './manifest.ts'
import type { Container, PodTemplate } from './pod.ts'

export const WARMUP_ANNOTATION = 'lameduck.dev/warmup-ms'
export const READINESS_ANNOTATION = 'lameduck.dev/readiness-while-draining'
export const SIDECAR_ANNOTATION = 'lameduck.dev/sidecar'
const READINESS_ENV = 'LAMEDUCK_READINESS_WHILE_DRAINING'

export interface AppConfig {
  /** The app's warmupMs; 0 when it says none. */
  warmupMs: number
  warmupPath?: Path
  /** The engine option readinessWhileDraining ('fail' is its default). */
  readiness: ReadinessWhileDraining
  readinessSource: string
  /** What the app's `sidecar` option drains ('istio', 'native'), when the manifest says. */
  sidecar?: { value: string, path: Path }
  problems: Array<{ path: Path, message: string }>
}

export function appConfig (pod: PodTemplate, apps: Container[]): AppConfig {
  const problems: AppConfig['problems'] = []
  const out: AppConfig = { warmupMs: 0, readiness: 'fail', readinessSource: 'the engine\'s default', problems }
  const warmup = find(pod, WARMUP_ANNOTATION)
  if (warmup !== undefined) {
    const n = Number(warmup.value)
    if (warmup.value.trim() !== '' && Number.isInteger(n) && n >= 0 && n <= MAX_FLAG_MS) {
      out.warmupMs = n
      out.warmupPath = warmup.path
    } else {
      problems.push({ path: warmup.path, message: `annotation ${WARMUP_ANNOTATION}: must be a whole number of milliseconds up to ${MAX_FLAG_MS}, e.g. "60000" (got '${warmup.value}')` })
    }
  }
  let readiness: { value: string, path: Path, source: string } | undefined
  const a = find(pod, READINESS_ANNOTATION)
  if (a !== undefined) readiness = { ...a, source: `annotation ${READINESS_ANNOTATION}` }
  for (const c of apps) {
    if (readiness !== undefined) break
    const env = Array.isArray(c.value.env) ? c.value.env : []
    const i = env.findIndex((e) => isRecord(e) && e.name === READINESS_ENV && typeof e.value === 'string')
    if (i >= 0) readiness = { value: String((env[i] as Record<string, unknown>).value), path: [...c.path, 'env', i, 'value'], source: `env ${READINESS_ENV} of '${c.name}'` }
  }
  if (readiness !== undefined) {
    if ((READINESS_WHILE_DRAINING as readonly string[]).includes(readiness.value)) {
      out.readiness = readiness.value as ReadinessWhileDraining
      out.readinessSource = readiness.source
    } else {
      problems.push({ path: readiness.path, message: `${readiness.source}: must be ${READINESS_WHILE_DRAINING.map((r) => `'${r}'`).join(' or ')} (got '${readiness.value}')` })
    }
  }
  const sidecar = find(pod, SIDECAR_ANNOTATION)
  if (sidecar !== undefined) out.sidecar = sidecar
  return out
}

/** A lameduck.dev/* annotation on the pod template, else on the workload. */
export function find (pod: PodTemplate, key: string): { value: string, path: Path } | undefined {
  if (pod.annotations[key] !== undefined) return { value: pod.annotations[key], path: [...pod.metaPath, 'annotations', key] }
  if (pod.workloadAnnotations[key] !== undefined) return { value: pod.workloadAnnotations[key], path: ['metadata', 'annotations', key] }
  return undefined
}
