#!/usr/bin/env node
// `lameduck <command> [flags]`. The only place that touches the process: signals
// abort the command's context, and the exit code comes from the command.
import { constants } from 'node:os'
import { main, type MainContext } from './main.ts'

const controller = new AbortController()
let signals = 0
function onSignal (signal: NodeJS.Signals): void {
  // The first signal lets the command finish cleanly; a second one ends it now.
  if (signals++ === 0) controller.abort(new Error(`received ${signal}`))
  else process.exit(128 + (constants.signals[signal] ?? 0))
}
process.on('SIGINT', onSignal)
process.on('SIGTERM', onSignal)

const io: MainContext = {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  signal: controller.signal,
  // A getter: touching process.stdin opens it, and only `doctor -` reads it.
  get stdin () { return process.stdin }
}

const code = await main(process.argv.slice(2), io)
process.off('SIGINT', onSignal)
process.off('SIGTERM', onSignal)
process.exitCode = code
// Normally the process ends by itself once output is flushed; this only guards
// against a handle left open somewhere.
setTimeout(() => process.exit(code), 2_000).unref()
