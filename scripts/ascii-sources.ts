// Fails (exit 1) on a character outside ASCII in the sources a service loads: one such
// character makes V8 hold that module's whole source text as UTF-16, twice the bytes, on the
// heap for the life of the process (Node keeps every module's source for lazy compilation and
// Function.prototype.toString), where every full GC marks it. Measured: a 200 KB module keeps
// 207 KB, with one '→' in a comment 404 KB. The CLI, the devkit and test-utils run as tools,
// not inside a service, and keep their box-drawing and arrows.
//   node scripts/ascii-sources.ts          check (part of `npm run lint`)
//   node scripts/ascii-sources.ts --fix    comments to ASCII (→ becomes ->), literals to \u escapes
import { globSync, readFileSync, writeFileSync } from 'node:fs'
import ts from 'typescript'

const TOOLS = new Set(['cli', 'devkit', 'test-utils'])

/** What a comment says instead: the same meaning in ASCII. */
const IN_COMMENTS = new Map<string, string>([
  ['→', '->'], ['←', '<-'], ['×', 'x'], ['–', '-'], ['—', '--'], ['−', '-'], ['≥', '>='], ['≤', '<='], ['…', '...'],
  ['§', 'section '], ['Σ', 'sum of'], ['µ', 'u'], ['±', '+/-'], ['÷', '/'], ['·', '*'], ['≈', '~']
])

export interface NonAscii { file: string, line: number, column: number, char: string, inLiteral: boolean }

/** The shipped sources of the packages a service loads. */
export function runtimeSources (): string[] {
  return globSync('packages/*/src/**/*.ts').filter((f) => !TOOLS.has(f.split('/')[1]!)).sort()
}

/** The [start, end) ranges of string, template and regular expression literals in `text`. */
function literalRanges (file: string, text: string): Array<[number, number]> {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS)
  const ranges: Array<[number, number]> = []
  const visit = (node: ts.Node): void => {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) || ts.isRegularExpressionLiteral(node) ||
        ts.isTemplateHead(node) || ts.isTemplateMiddle(node) || ts.isTemplateTail(node)) {
      ranges.push([node.getStart(source), node.getEnd()])
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return ranges
}

/** Every character of `text` past ASCII, and whether it sits in a literal (else: a comment). */
export function nonAscii (file: string, text: string): NonAscii[] {
  const found: NonAscii[] = []
  let ranges: Array<[number, number]> | null = null
  let line = 1
  let lineStart = 0
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code === 10) { line++; lineStart = i + 1; continue }
    if (code < 128) continue
    ranges ??= literalRanges(file, text)
    const char = String.fromCodePoint(text.codePointAt(i)!)
    found.push({ file, line, column: i - lineStart + 1, char, inLiteral: ranges.some(([s, e]) => i >= s && i < e) })
    i += char.length - 1
  }
  return found
}

/** `text` in ASCII: literals keep their value through \u escapes, comments get IN_COMMENTS' words. */
export function toAscii (file: string, text: string): string {
  const ranges = literalRanges(file, text)
  let out = ''
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code < 128) { out += text[i]; continue }
    if (ranges.some(([s, e]) => i >= s && i < e)) { out += `\\u${code.toString(16).padStart(4, '0')}`; continue }
    const word = IN_COMMENTS.get(text[i]!)
    if (word === undefined) throw new Error(`${file}: no ASCII word for '${text[i]}' (U+${code.toString(16)}) in a comment; add one to IN_COMMENTS`)
    out += word
  }
  return out
}

if (import.meta.main) {
  const fix = process.argv.includes('--fix')
  const found: NonAscii[] = []
  for (const file of runtimeSources()) {
    const text = readFileSync(file, 'utf8')
    const here = nonAscii(file, text)
    if (here.length === 0) continue
    if (fix) writeFileSync(file, toAscii(file, text))
    else found.push(...here)
  }
  for (const f of found) {
    console.error(`${f.file}:${f.line}:${f.column}: '${f.char}' (U+${f.char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}) in a ${f.inLiteral ? 'literal: write it as \\u' + f.char.codePointAt(0)!.toString(16).padStart(4, '0') : 'comment: write it in ASCII'}`)
  }
  if (found.length > 0) {
    console.error(`\n${found.length} character(s) outside ASCII in the runtime packages' sources: V8 keeps a module with any as UTF-16, twice its bytes, for the life of the process. \`node scripts/ascii-sources.ts --fix\` rewrites them.`)
    process.exit(1)
  }
}
