import type { FastifyBaseLogger } from 'fastify'
import { InvalidOptionError, type DrainStep, type StartupStep } from '@lameduck/core'
import type { ResolvedOptions } from './options.ts'

/** Envoy sidecar coordination: the startup and drain steps for the lifecycle. */
export function sidecarSteps (_options: Exclude<ResolvedOptions['sidecar'], false>, _log: FastifyBaseLogger): { beforeRegister: StartupStep[], afterWindow: DrainStep[] } {
  throw new InvalidOptionError('sidecar', 'Envoy coordination is not wired yet')
}
