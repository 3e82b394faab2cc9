// Reads the Envoy fixtures (copied from shared/fixtures/envoy). Also used by the devkit tests.
import { readFileSync } from 'node:fs'

const dir = new URL('./fixtures/', import.meta.url)

export function fixture (name: string): string {
  return readFileSync(new URL(name, dir), 'utf8')
}

export function fixtureJson<T = Record<string, unknown>> (name: string): T {
  return JSON.parse(fixture(name)) as T
}

/** The three renderings of one state in CONSTRUCTED_stats_same_state_text_vs_prometheus.txt. */
export function constructedSections (): { text: string, json: string, prometheus: string } {
  const lines = fixture('CONSTRUCTED_stats_same_state_text_vs_prometheus.txt').split('\n')
  const section = (marker: string, end: (line: string) => boolean): string => {
    const start = lines.findIndex((l) => l.startsWith('# =====') && l.includes(marker))
    const out: string[] = []
    for (const line of lines.slice(start + 1)) {
      if (end(line)) break
      out.push(line)
    }
    return out.join('\n') + '\n'
  }
  return {
    text: section('GET /stats?usedonly&filter=downstream_cx_active$ ', (l) => l === '#'),
    json: section('format=json', (l) => l === '#').trim(),
    // Ends with the blank line Envoy prints after the last family, as the others.
    prometheus: section('/stats/prometheus', (l) => l.startsWith('# NOTE'))
  }
}

/** Each fixture with the count its README documents, and how to count it. */
export const DOCUMENTED_COUNTS: Array<{ file: string | null, method: 'istio' | 'contour', expected: number, excludePorts?: number[] }> = [
  // Istio's agent_test.go runs with statusPort 15021 and prometheusPort 15009.
  { file: 'istio_stats_downstream_cx_active_positive.txt', method: 'istio', expected: 19, excludePorts: [15021, 15009] },
  { file: 'istio_stats_downstream_cx_active_zero.txt', method: 'istio', expected: 0, excludePorts: [15021, 15009] },
  { file: 'istio_stats_downstream_cx_active_ambient_only.txt', method: 'istio', expected: 0, excludePorts: [15021, 15009] },
  { file: null, method: 'istio', expected: -1 },
  { file: 'contour_prometheus_valid_http.txt', method: 'contour', expected: 4 },
  { file: 'contour_prometheus_valid_https.txt', method: 'contour', expected: 4 },
  { file: 'contour_prometheus_valid_both.txt', method: 'contour', expected: 8 },
  { file: 'contour_prometheus_many_listeners.txt', method: 'contour', expected: 16 },
  { file: 'contour_prometheus_missing_stat.txt', method: 'contour', expected: -1 }
]
