import { LameduckError } from '@lameduck/core'

/**
 * The gRPC server was not bound (no bindAsync() finished, or not the port named
 * by `bindAddress`) within `bindTimeoutMs`: nothing is registered, /status shows
 * it as the startup failure, and the log says what to do.
 */
export class NotBoundError extends LameduckError {
  readonly timeoutMs: number
  readonly bindAddress: string | undefined
  constructor (timeoutMs: number, bindAddress: string | undefined, bound: string[]) {
    const what = bindAddress === undefined ? 'no port' : `not ${JSON.stringify(bindAddress)}`
    const has = bound.length === 0 ? 'it has no bound port' : `it has ${bound.join(', ')}`
    super('LAMEDUCK_ERR_GRPC_NOT_BOUND', `the gRPC server bound ${what} within ${timeoutMs} ms (${has}): call server.bindAsync(address, credentials, callback); lameduck registers once it is bound (bindTimeoutMs sets the bound)`)
    this.name = 'NotBoundError'
    this.timeoutMs = timeoutMs
    this.bindAddress = bindAddress
  }
}
