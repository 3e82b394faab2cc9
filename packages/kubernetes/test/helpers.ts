import type { Logger } from '@lameduck/core'

export interface Line { level: 'debug' | 'info' | 'warn' | 'error', obj: Record<string, unknown>, msg: string }

/** A logger that keeps what it is told. */
export function recordingLogger (): Logger & { lines: Line[], warnings: () => string[] } {
  const lines: Line[] = []
  const at = (level: Line['level']) => (obj: object, msg = ''): void => { lines.push({ level, obj: obj as Record<string, unknown>, msg }) }
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), warnings: () => lines.filter((l) => l.level === 'warn').map((l) => l.msg) }
}
