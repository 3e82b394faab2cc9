// The lifecycle's states and the transitions between them. Anything not listed
// here is refused with InvalidTransitionError.

export const STATES = ['starting', 'waiting', 'registering', 'serving', 'draining', 'offline', 'closing', 'stopped'] as const
export type LifecycleState = typeof STATES[number]

const ALLOWED: Record<LifecycleState, readonly LifecycleState[]> = {
  starting: ['waiting', 'offline', 'closing'],
  waiting: ['registering', 'offline', 'closing'],
  registering: ['serving', 'draining', 'closing'],
  serving: ['draining', 'closing'],
  draining: ['offline', 'registering', 'closing'],
  offline: ['registering', 'closing'],
  closing: ['stopped'],
  stopped: []
}

export function canTransition (from: LifecycleState, to: LifecycleState): boolean {
  return ALLOWED[from].includes(to)
}

/** States in which the instance is (or may be) in the registry and must be drained before stopping. */
export function isRegistered (state: LifecycleState): boolean {
  return state === 'registering' || state === 'serving'
}
