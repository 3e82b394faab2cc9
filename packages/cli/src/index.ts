export type { Command, CommandContext } from './command.ts'
export { EXIT } from './command.ts'
