// A CLI command: parses its own argv (node:util parseArgs), writes to the given
// streams and resolves with the process exit code. Only bin.ts calls process.exit.
export interface CommandContext {
  argv: string[]
  stdout: NodeJS.WritableStream & { isTTY?: boolean, columns?: number }
  stderr: NodeJS.WritableStream
  env: NodeJS.ProcessEnv
  /** Aborted on SIGINT/SIGTERM. */
  signal: AbortSignal
  /** Read by commands that accept `-` as a file (doctor). Default: none. */
  stdin?: NodeJS.ReadableStream
}

export interface Command {
  name: string
  /** One line for `lameduck --help`. */
  summary: string
  /** Full `--help` text, with an example. */
  help: string
  run(ctx: CommandContext): Promise<number>
}

/** Exit codes shared by every command (documented in the README). */
export const EXIT = {
  OK: 0,
  /** The check failed or the target reported a problem (doctor findings, drain not reached). */
  FAILED: 1,
  /** Bad flags or arguments. */
  USAGE: 2,
  /** Could not reach the target (connection refused, DNS, timeout). */
  UNREACHABLE: 3,
  /** The target refused the request (401/403). */
  UNAUTHORIZED: 4,
  /** prestop: the app is offline, but its registry never confirmed the deregistration (consumers may still route to it). */
  UNCONFIRMED: 5
} as const
