// The doctor's output: findings first with file:line, then a one-line verdict.
import { formatSeconds } from '../args.ts'
import type { CheckedObject, CheckRun, Finding, Severity } from './checks.ts'

export interface DoctorResult {
  ok: boolean
  files: string[]
  objects: CheckedObject[]
  findings: Finding[]
  counts: Record<Severity, number>
  /** Every check that ran on this input, with how many objects it looked at. */
  checks: CheckRun[]
}

export function summarize (files: string[], objects: CheckedObject[], findings: Finding[], strict: boolean, checks: CheckRun[] = []): DoctorResult {
  const counts: Record<Severity, number> = { error: 0, warning: 0, info: 0 }
  for (const f of findings) counts[f.severity]++
  return { ok: counts.error === 0 && (!strict || counts.warning === 0), files, objects, findings, counts, checks }
}

export function renderText (result: DoctorResult): string {
  const out: string[] = []
  const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`
  out.push(`lameduck doctor: ${plural(result.objects.length, 'object')} checked in ${result.files.join(', ')}`)
  for (const o of result.objects) {
    const w = o.window
    const where = result.files.length === 1 ? `line ${o.line}` : `${o.file}:${o.line}`
    if (o.note !== undefined) {
      out.push(`  ${o.object} (${where}): ${o.note}`)
      continue
    }
    const istio = o.istio ? `; Istio ${o.istio.mode} (${o.istio.why})` : ''
    out.push(`  ${o.object} (${where})${w ? `: window ${formatSeconds(w.totalMs)} (${w.preset}, ${w.source}), longest request ${formatSeconds(w.maxRequestMs)} (${w.maxRequestSource})${istio}` : ''}`)
  }
  out.push('')
  for (const f of result.findings) {
    out.push(`${f.file}:${f.line}:${f.column}  ${f.severity}  ${f.code}  ${f.object}`)
    out.push(`  ${f.message}`)
    if (f.tradeoff) out.push(`  trade-off: ${f.tradeoff}`)
    out.push(`  fix: ${f.fix}`)
    out.push('')
  }
  const { error, warning, info } = result.counts
  if (result.findings.length === 0) out.push('no findings')
  else out.push(`${plural(error, 'error')}, ${plural(warning, 'warning')}${info > 0 ? `, ${info} info` : ''}${error > 0 ? ': a rolling deploy would lose traffic' : ''}`)
  return out.join('\n') + '\n'
}
