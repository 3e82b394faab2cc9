#!/usr/bin/env node
// The `lameduck-devkit` command. Committed (not built) so npm links it at install time, and
// plain JavaScript that any Node parses, so an older Node gets one line, not a stack trace.
import { existsSync } from 'node:fs'
import module from 'node:module'

const [major, minor] = process.versions.node.split('.').map(Number)
if (major < 22 || (major === 22 && minor < 19)) {
  process.stderr.write(`lameduck-devkit: Node.js >= 22.19 is required, this is ${process.version} (nvm use 24, or see https://nodejs.org)\n`)
  process.exit(1)
}

// The built entry when there is one (and the `@lameduck/source` condition is not asked for);
// in a clone without a build, the TypeScript sources, their workspace imports resolved
// through that condition.
const built = new URL('../dist/bin.js', import.meta.url)
const source = new URL('../src/bin.ts', import.meta.url)
const wantSource = process.execArgv.some((a) => a.includes('@lameduck/source')) || !existsSync(built)
if (wantSource && existsSync(source)) {
  module.registerHooks({
    resolve: (specifier, context, next) => next(specifier, { ...context, conditions: [...context.conditions, '@lameduck/source'] })
  })
  await import(source.href)
} else if (existsSync(built)) {
  await import(built.href)
} else {
  process.stderr.write('lameduck-devkit: neither dist/bin.js nor src/bin.ts is there; run `npm run build`\n')
  process.exit(1)
}
