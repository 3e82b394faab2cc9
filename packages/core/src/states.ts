// The lifecycle's states, the transitions between them, and what each state
// means to the parts around the lifecycle (plugin, balancer, CLI). Anything not
// in the transition table is refused with InvalidTransitionError.

export const STATES = ['starting', 'waiting', 'registering', 'serving', 'draining', 'offline', 'closing', 'stopped'] as const
export type LifecycleState = typeof STATES[number]

const ALLOWED: Record<LifecycleState, readonly LifecycleState[]> = {
  // offline()/online() before start() throw NotStartedError: there is no instance yet.
  starting: ['waiting', 'closing'],
  waiting: ['registering', 'offline', 'closing'],
  registering: ['serving', 'draining', 'closing'],
  serving: ['draining', 'closing'],
  draining: ['offline', 'registering', 'closing'],
  // online() after an offline that came before the startup passed goes back to waiting.
  offline: ['waiting', 'registering', 'closing'],
  closing: ['stopped'],
  stopped: []
}

export function canTransition (from: LifecycleState, to: LifecycleState): boolean {
  return ALLOWED[from].includes(to)
}

/** The questions asked about a state, answered once here. */
export interface StateClass {
  /**
   * The lifecycle put (or is putting) the instance in the registry and no offline
   * sequence has finished since: a shutdown must run, or join, one first.
   */
  readonly registered: boolean
  /** The instance is leaving: responses carry `x-lameduck-state`, consumers stop picking it. */
  readonly leaving: boolean
  /** The offline sequence is over or the process is going away: a preStop hook has nothing left to wait for. */
  readonly stopping: boolean
}

export const STATE_CLASSES: Readonly<Record<LifecycleState, StateClass>> = {
  starting: { registered: false, leaving: false, stopping: false },
  waiting: { registered: false, leaving: false, stopping: false },
  registering: { registered: true, leaving: false, stopping: false },
  serving: { registered: true, leaving: false, stopping: false },
  draining: { registered: true, leaving: true, stopping: false },
  offline: { registered: false, leaving: true, stopping: true },
  closing: { registered: false, leaving: true, stopping: true },
  stopped: { registered: false, leaving: true, stopping: true }
}

/** The class of `state`; undefined for a string that is not a state (e.g. from another version's JSON). */
export function stateClass (state: string): StateClass | undefined {
  return Object.hasOwn(STATE_CLASSES, state) ? STATE_CLASSES[state as LifecycleState] : undefined
}

/** States where a shutdown must run or join the offline sequence first (registering, serving, draining). */
export function isRegistered (state: string): boolean {
  return stateClass(state)?.registered === true
}

/** States announced in `x-lameduck-state` (draining, offline, closing, stopped). */
export function isLeaving (state: string): boolean {
  return stateClass(state)?.leaving === true
}

/** States past the drain (offline, closing, stopped). */
export function isStopping (state: string): boolean {
  return stateClass(state)?.stopping === true
}

function statesWhere (key: keyof StateClass): ReadonlySet<LifecycleState> {
  return new Set(STATES.filter((s) => STATE_CLASSES[s][key]))
}

/** The leaving states as a set (what `LEAVING_STATES` in the header protocol is). */
export const LEAVING: ReadonlySet<LifecycleState> = statesWhere('leaving')
/** The stopping states as a set: what `lameduck prestop` treats as "nothing left to drain". */
export const STOPPING_STATES: ReadonlySet<LifecycleState> = statesWhere('stopping')
