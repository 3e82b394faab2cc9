// The dispatcher behind bin.ts: `lameduck <command> [flags]`, help, version and
// errors. Returns the exit code; bin.ts owns the process.
import { readFileSync } from 'node:fs'
import { closest, LameduckError } from '@lameduck/core'
import { UsageError } from './args.ts'
import { EXIT, type Command, type CommandContext } from './command.ts'
import { COMMANDS } from './commands/index.ts'

export type MainContext = Omit<CommandContext, 'argv'>

const EXIT_CODES = `Exit codes:
  0  ok
  1  failed: the check found a problem, or the app did not reach the state
  2  bad flags or arguments
  3  the target is unreachable (connection refused, DNS, timeout)
  4  the target refused the request (401/403: token)
  5  prestop: offline, but the deregistration is unconfirmed (consumers may
     still route to the app)`

async function usage (): Promise<string> {
  const commands = await Promise.all(COMMANDS.map((c) => c.load()))
  const width = Math.max(...commands.map((c) => c.name.length))
  return `lameduck: lossless rolling deploys for Node.js services (Kubernetes hooks and checks)

Usage: lameduck <command> [flags]

Commands:
${commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`).join('\n')}

Run 'lameduck <command> --help' for its flags and an example.

${EXIT_CODES}
`
}

function version (): string {
  // src/ and dist/ both sit one level below the package root.
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
  return pkg.version
}

const isHelp = (arg: string | undefined): boolean => arg === '--help' || arg === '-h'

export async function main (argv: string[], io: MainContext): Promise<number> {
  const [name, ...rest] = argv
  if (name === undefined) {
    io.stderr.write(await usage())
    return EXIT.USAGE
  }
  if (isHelp(name) || (name === 'help' && rest.length === 0)) {
    io.stdout.write(await usage())
    return EXIT.OK
  }
  if (name === '--version' || name === '-v') {
    io.stdout.write(`${version()}\n`)
    return EXIT.OK
  }
  const helpFor = name === 'help' ? rest[0] : undefined
  const entry = COMMANDS.find((c) => c.name === (helpFor ?? name))
  if (entry === undefined) {
    const unknown = helpFor ?? name
    const hint = closest(unknown, COMMANDS.map((c) => c.name))
    io.stderr.write(`lameduck: unknown command '${unknown}'${hint ? ` (did you mean '${hint}'?)` : ''}\n\n${await usage()}`)
    return EXIT.USAGE
  }
  const command: Command = await entry.load()
  // `--help` anywhere before a `--` asks for help, whatever else is on the line.
  const flags = rest.includes('--') ? rest.slice(0, rest.indexOf('--')) : rest
  if (helpFor !== undefined || flags.some(isHelp)) {
    io.stdout.write(command.help)
    return EXIT.OK
  }
  try {
    // Copy the descriptors, not the values: io.stdin may be a getter that opens stdin.
    const ctx = Object.defineProperties({ argv: rest }, Object.getOwnPropertyDescriptors(io)) as CommandContext
    return await command.run(ctx)
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr.write(`lameduck ${command.name}: ${err.message}\nRun 'lameduck ${command.name} --help' for its flags and an example.\n`)
      return EXIT.USAGE
    }
    const message = err instanceof Error ? err.message : String(err)
    const known = err instanceof LameduckError
    io.stderr.write(`lameduck ${command.name}: ${known ? '' : 'unexpected error: '}${message}\n`)
    if (!known && io.env.LAMEDUCK_DEBUG) io.stderr.write(`${(err as Error)?.stack ?? ''}\n`)
    return EXIT.FAILED
  }
}
