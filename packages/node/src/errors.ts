import { InvalidTransitionError } from '@lameduck/core'

/**
 * offline()/online() before the server listens: there is no instance yet to
 * take offline or bring online. An InvalidTransitionError (its code) from
 * 'starting', named for what to do.
 */
export class NotListeningError extends InvalidTransitionError {
  constructor (to: 'draining' | 'registering') {
    super('starting', to, 'the server is not listening yet: offline() and online() apply once it listens (the lifecycle starts then)')
    this.name = 'NotListeningError'
  }
}
