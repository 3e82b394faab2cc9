// Loads Kubernetes manifests (multi-document YAML, `kind: List`) and keeps the
// parsed documents so every finding can name the line it is about.
import { LineCounter, isMap, isScalar, isSeq, parseAllDocuments, type Document } from 'yaml'
import { LameduckError } from '@lameduck/core'

export type Path = ReadonlyArray<string | number>
export interface Position { line: number, column: number }

export interface ManifestObject {
  file: string
  kind: string
  name: string
  namespace: string | undefined
  /** The object as plain data. */
  value: Record<string, unknown>
  /** Line and column of `path` inside this object (the nearest existing parent when absent). */
  locate(path: Path): Position
}

/** The input is not valid YAML: names the file, line and column. */
export class ManifestError extends LameduckError {
  readonly file: string
  readonly line: number
  readonly column: number
  constructor (file: string, line: number, column: number, message: string) {
    super('LAMEDUCK_ERR_MANIFEST', `${file}:${line}:${column}: ${message}`)
    this.name = 'ManifestError'
    this.file = file
    this.line = line
    this.column = column
  }
}

type Doc = Document.Parsed

export function loadManifests (text: string, file: string): ManifestObject[] {
  const lines = new LineCounter()
  const docs = parseAllDocuments(text, { lineCounter: lines, prettyErrors: true, uniqueKeys: true })
  const list = Array.isArray(docs) ? docs : []
  const objects: ManifestObject[] = []
  for (const doc of list) {
    const error = doc.errors[0]
    if (error !== undefined) {
      const pos = error.linePos?.[0] ?? { line: 1, col: 1 }
      // yaml's message ends in " at line N, column M:" plus a source excerpt; keep both, say it once.
      const [head = '', ...excerpt] = error.message.split('\n')
      const what = head.replace(/ at line \d+, column \d+:?$/, '')
      throw new ManifestError(file, pos.line, pos.col, `invalid YAML: ${what}${excerpt.some((l) => l.trim()) ? `\n${excerpt.join('\n').trimEnd()}` : ''}`)
    }
    let value: unknown
    try {
      value = doc.toJS({ maxAliasCount: 1000 })
    } catch (err) {
      const start = doc.contents?.range?.[0] ?? 0
      const pos = lines.linePos(start)
      throw new ManifestError(file, pos.line, pos.col, `cannot read this document: ${(err as Error).message}`)
    }
    if (!isRecord(value)) continue
    const kind = typeof value.kind === 'string' ? value.kind : ''
    if ((kind === 'List' || kind.endsWith('List')) && Array.isArray(value.items)) {
      value.items.forEach((item, i) => { if (isRecord(item)) objects.push(object(file, doc, lines, item, ['items', i])) })
    } else if (kind !== '') {
      objects.push(object(file, doc, lines, value, []))
    }
  }
  return objects
}

function object (file: string, doc: Doc, lines: LineCounter, value: Record<string, unknown>, base: Path): ManifestObject {
  const metadata = isRecord(value.metadata) ? value.metadata : {}
  return {
    file,
    kind: String(value.kind),
    name: typeof metadata.name === 'string' ? metadata.name : '(unnamed)',
    namespace: typeof metadata.namespace === 'string' ? metadata.namespace : undefined,
    value,
    locate: (path) => {
      const { line, col } = lines.linePos(offsetOf(doc, [...base, ...path]))
      return { line, column: col }
    }
  }
}

/** Offset of the deepest node on `path`: a map entry's key, a list item's start. */
function offsetOf (doc: Doc, path: Path): number {
  let node: unknown = doc.contents
  let offset = rangeStart(node) ?? 0
  for (const key of path) {
    if (isMap(node)) {
      const pair = node.items.find((p) => (isScalar(p.key) ? p.key.value : p.key) === key)
      if (pair === undefined) break
      offset = rangeStart(pair.key) ?? offset
      node = pair.value
    } else if (isSeq(node) && typeof key === 'number') {
      const item = node.items[key]
      if (item === undefined) break
      offset = rangeStart(item) ?? offset
      node = item
    } else {
      break
    }
  }
  return offset
}

function rangeStart (node: unknown): number | undefined {
  const range = (node as { range?: [number, number, number] } | null)?.range
  return range?.[0]
}

export function isRecord (v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}
