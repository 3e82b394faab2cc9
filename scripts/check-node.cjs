#!/usr/bin/env node
// Run first by every npm script of the repository (`node scripts/check-node.cjs && ...`):
// on a Node older than package.json's engines it prints one line and exits 1, before a
// build, a lint or a test starts (which would fail minutes later with a stack trace).
// CommonJS and ES2015 on purpose, so that any Node still in use parses it.
'use strict'
/* eslint-disable n/prefer-node-protocol -- require('node:fs') needs Node 14.18; this file must run on older ones */
const fs = require('fs')
const path = require('path')

const engines = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8')).engines
const wanted = /^>=\s*(\d+)\.(\d+)/.exec(engines.node)
if (!wanted) {
  process.stderr.write('lameduck: package.json engines.node must read ">=MAJOR.MINOR.PATCH", it reads ' + JSON.stringify(engines.node) + '\n')
  process.exit(1)
}
const have = process.versions.node.split('.').map(Number)
const major = Number(wanted[1])
const minor = Number(wanted[2])
if (have[0] < major || (have[0] === major && have[1] < minor)) {
  process.stderr.write('lameduck: Node.js >= ' + major + '.' + minor + ' is required, this is ' + process.version +
    ' (nvm use 24, or see https://nodejs.org)\n')
  process.exit(1)
}
