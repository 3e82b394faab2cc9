// Lists the functions of the shipped sources that run over MAX_LINES lines, and fails
// (exit 1) on one that is not in scripts/long-functions.allow.json with a reason: a new
// long function is a change to split along its seams, or to defend in one line.
//   node scripts/long-functions.ts          check (part of `npm run lint`)
//   node scripts/long-functions.ts --all    list every function over the limit, allowed or not
import { globSync, readFileSync } from 'node:fs'
import ts from 'typescript'

export const MAX_LINES = 60
const SOURCES = ['packages/*/src/**/*.ts', 'examples/*/src/**/*.ts', 'scripts/**/*.ts']
const ALLOW_FILE = 'scripts/long-functions.allow.json'

export interface LongFunction { file: string, name: string, line: number, lines: number }
interface Allowed { file: string, name: string, reason: string }

/** Every function in `text` longer than `max` lines, named by its enclosing functions (`outer.inner`). */
export function longFunctions (file: string, text: string, max = MAX_LINES): LongFunction[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS)
  const found: LongFunction[] = []
  const lineOf = (pos: number): number => source.getLineAndCharacterOfPosition(pos).line + 1
  const visit = (node: ts.Node, outer: string): void => {
    let scope = outer
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      scope = outer === '' ? nameOf(node) : `${outer}.${nameOf(node)}`
      const line = lineOf(node.getStart(source))
      const lines = lineOf(node.getEnd()) - line + 1
      if (lines > max) found.push({ file, name: scope, line, lines })
    }
    ts.forEachChild(node, (child) => visit(child, scope))
  }
  visit(source, '')
  return found
}

// A stable name for the allow-list: the declared name, else what the function is assigned
// to, else the call it is passed to (`on(request)`), else its kind.
function nameOf (node: ts.SignatureDeclaration): string {
  if (node.name !== undefined && !ts.isComputedPropertyName(node.name)) return node.name.getText()
  if (ts.isConstructorDeclaration(node)) return 'constructor'
  const parent = node.parent
  if ((ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) && !ts.isComputedPropertyName(parent.name)) {
    return parent.name.getText()
  }
  if (ts.isCallExpression(parent)) {
    const callee = parent.expression
    const called = ts.isPropertyAccessExpression(callee) ? callee.name.getText() : callee.getText()
    const first = parent.arguments[0]
    const label = first !== undefined && ts.isStringLiteralLike(first) ? first.text : ''
    return `${called}(${label})`
  }
  return '(anonymous)'
}

function main (): void {
  const all = process.argv.includes('--all')
  const files = SOURCES.flatMap((p) => globSync(p, { exclude: (f) => f.includes('node_modules') || f.includes('/dist/') }))
    .filter((f) => !f.endsWith('.d.ts'))
    .sort()
  const found = files.flatMap((f) => longFunctions(f, readFileSync(f, 'utf8')))
  const allowed: Allowed[] = JSON.parse(readFileSync(ALLOW_FILE, 'utf8'))
  const isAllowed = (f: LongFunction): Allowed | undefined => allowed.find((a) => a.file === f.file && a.name === f.name)
  const fresh = found.filter((f) => isAllowed(f) === undefined)
  for (const f of all ? found : fresh) {
    const why = isAllowed(f)?.reason
    console.log(`${f.file}:${f.line} ${f.name} ${f.lines} lines${why === undefined ? '' : ` (allowed: ${why})`}`)
  }
  for (const a of allowed) {
    if (!found.some((f) => f.file === a.file && f.name === a.name)) {
      console.log(`note: ${a.file} ${a.name} is no longer over ${MAX_LINES} lines; drop it from ${ALLOW_FILE}`)
    }
  }
  if (fresh.length > 0) {
    console.error(`${fresh.length} function(s) over ${MAX_LINES} lines: split them along their seams, or add { file, name, reason } to ${ALLOW_FILE}`)
    process.exitCode = 1
  }
}

if (import.meta.main) main()
