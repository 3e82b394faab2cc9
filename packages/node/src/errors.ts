import { LameduckError } from '@lameduck/core'

/** offline()/online() before the server listens: there is no instance yet to take offline or bring online. */
export class NotListeningError extends LameduckError {
  constructor () {
    super('LAMEDUCK_ERR_NOT_LISTENING', 'the server is not listening yet: offline() and online() work once it listens (the lifecycle starts then)')
    this.name = 'NotListeningError'
  }
}
