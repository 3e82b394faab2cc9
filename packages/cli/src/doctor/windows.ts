// Which propagation window and longest request a pod is checked against:
// --windows, else the pod's lameduck.dev/windows annotation, else the app's
// LAMEDUCK_WINDOWS env, else 'kubernetes' (the plugin's own default).
import { InvalidOptionError, propagationWindow, type PropagationWindow, type WindowsInput } from '@lameduck/core'
import { DEFAULT_MAX_REQUEST_MS, MAX_REQUEST_ANNOTATION, WINDOWS_ANNOTATION } from '../plan.ts'
import { MAX_FLAG_MS } from '../args.ts'
import type { Path } from './manifest.ts'
import { isRecord } from './manifest.ts'
import type { Container, PodTemplate } from './pod.ts'

export interface WindowChoice {
  window: PropagationWindow
  /** Where it came from, for the report. */
  source: string
  maxRequestMs: number
  maxRequestSource: string
  /** A lameduck.dev/* value that could not be read, and where. */
  problems: Array<{ path: Path, message: string }>
}

export interface WindowFlags {
  /** --windows, resolved once by the command (every pod is checked against it). */
  window?: PropagationWindow
  maxRequestMs?: number
}

/** A preset name, or JSON parts. Throws InvalidOptionError naming `option` on JSON that does not parse. */
export function parseWindowsValue (raw: string, option: string): WindowsInput {
  const text = raw.trim()
  if (!text.startsWith('{')) return text as WindowsInput
  try {
    return JSON.parse(text) as WindowsInput
  } catch (err) {
    throw new InvalidOptionError(option, `not valid JSON (${(err as Error).message}); give a preset name or JSON parts, e.g. {"preset":"nacos","marginMs":2000}`)
  }
}

/** The --windows flag (a preset or JSON parts) as a window; InvalidOptionError naming --windows otherwise. */
export function windowsFlag (raw: string): PropagationWindow {
  return propagationWindow(parseWindowsValue(raw, '--windows'), '--windows')
}

export function chooseWindow (pod: PodTemplate, apps: Container[], flags: WindowFlags): WindowChoice {
  const problems: WindowChoice['problems'] = []
  let window: PropagationWindow | undefined
  let source = ''
  if (flags.window !== undefined) {
    window = flags.window
    source = '--windows'
  }
  const annotation = find(pod, WINDOWS_ANNOTATION)
  if (window === undefined && annotation !== undefined) {
    try {
      window = propagationWindow(parseWindowsValue(annotation.value, WINDOWS_ANNOTATION), WINDOWS_ANNOTATION)
      source = `annotation ${WINDOWS_ANNOTATION}`
    } catch (err) {
      problems.push({ path: annotation.path, message: `annotation ${WINDOWS_ANNOTATION}: ${(err as Error).message.replace(/^[\w./-]+: /, '')}` })
    }
  }
  if (window === undefined) {
    for (const c of apps) {
      const env = Array.isArray(c.value.env) ? c.value.env : []
      const i = env.findIndex((e) => isRecord(e) && e.name === 'LAMEDUCK_WINDOWS' && typeof e.value === 'string')
      if (i < 0) continue
      const value = String((env[i] as Record<string, unknown>).value)
      try {
        window = propagationWindow(parseWindowsValue(value, 'LAMEDUCK_WINDOWS'), 'LAMEDUCK_WINDOWS')
        source = `env LAMEDUCK_WINDOWS of '${c.name}'`
      } catch (err) {
        problems.push({ path: [...c.path, 'env', i, 'value'], message: `env LAMEDUCK_WINDOWS: ${(err as Error).message.replace(/^[\w./-]+: /, '')}` })
      }
      break
    }
  }
  if (window === undefined) {
    window = propagationWindow('kubernetes')
    source = `the default; set annotation ${WINDOWS_ANNOTATION} to the app's windows`
  }

  // The plugin's default unless the manifest says otherwise: what the app really waits for.
  let maxRequestMs: number = DEFAULT_MAX_REQUEST_MS
  let maxRequestSource = `the plugin's default; set annotation ${MAX_REQUEST_ANNOTATION} to the app's maxRequestMs`
  if (flags.maxRequestMs !== undefined) {
    maxRequestMs = flags.maxRequestMs
    maxRequestSource = '--max-request-ms'
  } else {
    const a = find(pod, MAX_REQUEST_ANNOTATION)
    if (a !== undefined) {
      const n = Number(a.value)
      if (Number.isInteger(n) && n >= 0 && n <= MAX_FLAG_MS && a.value.trim() !== '') {
        maxRequestMs = n
        maxRequestSource = `annotation ${MAX_REQUEST_ANNOTATION}`
      } else {
        problems.push({ path: a.path, message: `annotation ${MAX_REQUEST_ANNOTATION}: must be a whole number of milliseconds up to ${MAX_FLAG_MS}, e.g. "30000" (got '${a.value}')` })
      }
    }
  }
  return { window, source, maxRequestMs, maxRequestSource, problems }
}

/** A lameduck.dev/* annotation on the pod template, else on the workload. */
function find (pod: PodTemplate, key: string): { value: string, path: Path } | undefined {
  if (pod.annotations[key] !== undefined) return { value: pod.annotations[key], path: [...pod.metaPath, 'annotations', key] }
  if (pod.workloadAnnotations[key] !== undefined) return { value: pod.workloadAnnotations[key], path: ['metadata', 'annotations', key] }
  return undefined
}
