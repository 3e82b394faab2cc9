// Typed errors with stable codes. `instanceof` works across duplicate copies of
// this package (two versions in one node_modules): every class, subclasses
// included, checks a global symbol brand named after the class
// (`Symbol.for('lameduck.error:<Name>')`) that the constructor sets for each class
// of the instance's chain. The base also keeps its original brand, so copies from
// before the per-class brands still recognise each other's LameduckError.
const kBrand = Symbol.for('lameduck.error')
const brandOf = (name: string): symbol => Symbol.for(`lameduck.error:${name}`)

function setBrand (target: object, key: symbol): void {
  Object.defineProperty(target, key, { value: true, enumerable: false })
}

export class LameduckError extends Error {
  readonly code: string

  constructor (code: string, message: string, options?: ErrorOptions) {
    super(message, options)
    this.name = 'LameduckError'
    this.code = code
    setBrand(this, kBrand)
    for (let c: unknown = new.target; typeof c === 'function' && c !== Error; c = Object.getPrototypeOf(c)) {
      setBrand(this, brandOf((c as { name: string }).name))
    }
  }

  static override [Symbol.hasInstance] (value: unknown): boolean {
    if (typeof value !== 'object' || value === null) return false
    const brand = this === LameduckError ? kBrand : brandOf(this.name)
    return (value as Record<symbol, unknown>)[brand] === true || Function.prototype[Symbol.hasInstance].call(this, value)
  }
}

/** An option or argument is wrong. The message names the option and the fix. */
export class InvalidOptionError extends LameduckError {
  readonly option: string
  constructor (option: string, message: string, options?: ErrorOptions) {
    super('LAMEDUCK_ERR_INVALID_OPTION', `${option}: ${message}`, options)
    this.name = 'InvalidOptionError'
    this.option = option
  }
}

/** A lifecycle transition that the state machine does not allow. */
export class InvalidTransitionError extends LameduckError {
  readonly from: string
  readonly to: string
  constructor (from: string, to: string, hint?: string) {
    super('LAMEDUCK_ERR_INVALID_TRANSITION', `cannot go from '${from}' to '${to}'${hint ? `: ${hint}` : ''}`)
    this.name = 'InvalidTransitionError'
    this.from = from
    this.to = to
  }
}

/** The instance is closing or stopped and cannot go online again. */
export class ClosingError extends LameduckError {
  readonly state: string
  constructor (state: string) {
    super('LAMEDUCK_ERR_CLOSING', `the instance is '${state}': it is shutting down and cannot go online again`)
    this.name = 'ClosingError'
    this.state = state
  }
}

/**
 * offline() or online() before start(): the app is not listening yet, so there
 * is no instance to register or deregister. A programming or ordering error,
 * never retried.
 */
export class NotStartedError extends LameduckError {
  readonly operation: string
  constructor (operation: string) {
    super('LAMEDUCK_ERR_NOT_STARTED', `cannot ${operation}: the app is not listening yet (the lifecycle starts when the server listens); call ${operation}() after listen()`)
    this.name = 'NotStartedError'
    this.operation = operation
  }
}

/** Something did not happen before its deadline (readiness, sidecar, drain). */
export class TimeoutError extends LameduckError {
  readonly timeoutMs: number
  constructor (what: string, timeoutMs: number, options?: ErrorOptions) {
    super('LAMEDUCK_ERR_TIMEOUT', `${what} did not complete within ${timeoutMs} ms`, options)
    this.name = 'TimeoutError'
    this.timeoutMs = timeoutMs
  }
}

/** A registry call failed. `operation` is register, deregister, heartbeat, ... */
export class RegistryError extends LameduckError {
  readonly operation: string
  constructor (operation: string, message: string, options?: ErrorOptions) {
    super('LAMEDUCK_ERR_REGISTRY', `registry ${operation} failed: ${message}`, options)
    this.name = 'RegistryError'
    this.operation = operation
  }
}
