// The command table. Commands load on demand, so `lameduck prestop` in a preStop
// hook does not pay for the YAML parser that only `doctor` needs.
import type { Command } from '../command.ts'

export interface CommandEntry {
  name: string
  load(): Promise<Command>
}

export const COMMANDS: readonly CommandEntry[] = [
  { name: 'prestop', load: async () => (await import('./prestop.ts')).prestop },
  { name: 'wait-ready', load: async () => (await import('./wait-ready.ts')).waitReady },
  { name: 'wait-drained', load: async () => commandOf(await import('./wait-drained.ts')) },
  { name: 'envoy-drain', load: async () => commandOf(await import('./envoy-drain.ts')) },
  { name: 'plan', load: async () => (await import('./plan.ts')).plan },
  { name: 'doctor', load: async () => (await import('./doctor.ts')).doctor }
]

/** The Command a module exports, whatever its export name. */
export function commandOf (module: Record<string, unknown>): Command {
  const found = Object.values(module).find((v): v is Command => typeof v === 'object' && v !== null && typeof (v as Command).run === 'function' && typeof (v as Command).name === 'string')
  if (found === undefined) throw new Error('command module exports no Command')
  return found
}
