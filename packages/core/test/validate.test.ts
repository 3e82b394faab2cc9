import assert from 'node:assert/strict'
import { test } from 'node:test'
import * as errors from '../src/errors.ts'
import { InvalidOptionError, LameduckError, checkKeys, closest, count, backoff, deprecatedAlias, duration, flag, fn, number, oneOf, record, show, url, withMethods } from '@lameduck/core'

const rejects = (fn: () => unknown, message: RegExp): void => {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof InvalidOptionError)
    assert.match((err as Error).message, message)
    return true
  })
}

test('every error class: instanceof holds across two copies of the module', async () => {
  // A second copy, as two versions of the package in one node_modules would load it.
  const copy = await import(new URL(`../src/errors.ts?copy=${Date.now()}`, import.meta.url).href) as typeof errors
  assert.notEqual(copy.InvalidOptionError, errors.InvalidOptionError)
  const make: Record<string, (e: typeof errors) => Error> = {
    LameduckError: (e) => new e.LameduckError('X', 'x'),
    InvalidOptionError: (e) => new e.InvalidOptionError('o', 'm'),
    InvalidTransitionError: (e) => new e.InvalidTransitionError('a', 'b'),
    ClosingError: (e) => new e.ClosingError('stopped'),
    NotStartedError: (e) => new e.NotStartedError('offline'),
    TimeoutError: (e) => new e.TimeoutError('x', 1),
    RegistryError: (e) => new e.RegistryError('register', 'x')
  }
  const classes = Object.keys(errors) as (keyof typeof errors)[]
  assert.deepEqual(classes.sort(), Object.keys(make).sort(), 'every exported error class is covered')
  for (const name of classes) {
    for (const [from, to] of [[errors, copy], [copy, errors]] as const) {
      const err = make[name]!(from)
      assert.ok(err instanceof to[name], `${name} from one copy is instanceof ${name} of the other`)
      assert.ok(err instanceof to.LameduckError, `${name} is a LameduckError of the other copy`)
      assert.ok(err instanceof Error)
    }
  }
  // Brands are per class: siblings and parents are not mistaken for each other.
  assert.ok(!(new copy.ClosingError('x') instanceof errors.InvalidOptionError))
  assert.ok(!(new copy.LameduckError('X', 'x') instanceof errors.TimeoutError))
  assert.ok(!(new Error('x') instanceof errors.LameduckError))
  // A subclass declared by another package inherits the check.
  class UnknownThing extends LameduckError {}
  assert.ok(new UnknownThing('X', 'x') instanceof UnknownThing)
  assert.ok(!(new LameduckError('X', 'x') instanceof UnknownThing))
  // The brands do not show in logs.
  assert.deepEqual(Object.getOwnPropertySymbols(new InvalidOptionError('o', 'm')).filter((s) => Object.getOwnPropertyDescriptor(new InvalidOptionError('o', 'm'), s)?.enumerable), [])
})

test('show: redacts credentials, names objects instead of dumping them', () => {
  assert.equal(show('abc'), "'abc'")
  assert.equal(show(null), 'null')
  assert.equal(show(undefined), 'undefined') // a missing option reads '(got undefined)', not 'undefined undefined'
  assert.equal(show(3), 'number 3')
  assert.equal(show([1]), 'an array')
  assert.equal(show({ a: 1 }), 'an object')
  assert.doesNotMatch(show(new URL('http://u:secret@h/')), /secret/)
})

test('duration, count, flag, oneOf, url: defaults, accepted values and messages', () => {
  assert.equal(duration('a', undefined, 5), 5)
  assert.equal(duration('a', 0, 5), 0)
  rejects(() => duration('a', -1, 5), /^a: must be a non-negative number of milliseconds, got number -1$/)
  rejects(() => duration('a', 0, 5, { positive: true }), /^a: must be a positive number/)
  rejects(() => duration('a', 2 ** 31, 5), /longer than a timer can wait/)
  rejects(() => duration('a', '5', 5), /got '5'/)
  assert.equal(count('n', undefined, 2), 2)
  rejects(() => count('n', 1.5, 2), /^n: must be a non-negative integer, got number 1.5$/)
  rejects(() => count('n', 0, 2, { min: 1 }), /^n: must be an integer >= 1, got number 0$/)
  rejects(() => count('port', 70000, 0, { max: 65535 }), /^port: must be an integer from 0 to 65535/)
  assert.equal(flag('f', undefined, true), true)
  rejects(() => flag('f', 'yes', true), /^f: must be true or false, got 'yes'$/)
  assert.equal(oneOf('m', undefined, ['a', 'b'], 'a'), 'a')
  rejects(() => oneOf('m', 'c', ['a', 'b'], 'a'), /^m: must be one of 'a', 'b'; got 'c'$/)
  assert.equal(url('u', 'http://127.0.0.1:1/x', 'http://h').port, '1')
  rejects(() => url('u', 'ftp://h', 'http://h'), /^u: must be an http:\/\/ or https:\/\/ URL such as 'http:\/\/h', got 'ftp:\/\/h'$/)
  rejects(() => url('u', 42, 'http://h'), /got number 42/)
})

test('checkKeys: unknown keys rejected with a did-you-mean hint', () => {
  const known = { timeoutMs: true, retries: true } as const
  checkKeys('client', { timeoutMs: 1 }, known)
  rejects(() => checkKeys('client', { timeoutMS: 1 }, known), /^client\.timeoutMS: unknown option \(did you mean 'timeoutMs'\?\); known options are timeoutMs, retries$/)
  rejects(() => checkKeys('', { zzzzzzzzzz: 1 }, known), /^zzzzzzzzzz: unknown option; known options are/)
  assert.equal(closest('prestp', ['prestop', 'plan']), 'prestop')
  // A deprecated alias is accepted, but a typo is pointed at the current name, and only current names are listed.
  const renamed = { warmupMs: true, warmup: 'deprecated', weight: true } as const
  checkKeys('', { warmup: 1 }, renamed)
  rejects(() => checkKeys('', { warmp: 1 }, renamed), /^warmp: unknown option \(did you mean 'warmupMs'\?\); known options are warmupMs, weight$/)
})

test('deprecatedAlias: the old name works and warns, the new name wins, both differing is an error', () => {
  const warnings: string[] = []
  const warn = (m: string): void => { warnings.push(m) }
  assert.equal(deprecatedAlias({ delay: 5 } as { delay?: number, delayMs?: number }, 'delay', 'delayMs', warn), 5)
  assert.match(warnings[0]!, /'delay' is deprecated; use 'delayMs'/)
  assert.equal(deprecatedAlias({ delayMs: 7 } as { delay?: number, delayMs?: number }, 'delay', 'delayMs', warn), 7)
  assert.equal(warnings.length, 1)
  assert.equal(deprecatedAlias({ delay: 7, delayMs: 7 } as { delay?: number, delayMs?: number }, 'delay', 'delayMs', warn), 7)
  rejects(() => deprecatedAlias({ delay: 5, delayMs: 7 } as { delay?: number, delayMs?: number }, 'delay', 'delayMs', warn), /^delay: is the deprecated name of 'delayMs'; set only 'delayMs'/)
})

test('number, record, fn, withMethods: defaults, accepted values and messages', () => {
  assert.equal(number('w', undefined, 100), 100)
  assert.equal(number('p', 100, 10, { max: 100 }), 100)
  rejects(() => number('p', 150, 10, { max: 100 }), /^p: must be a number from 0 to 100, got number 150$/)
  rejects(() => number('a', 0, 1, { above: true, hint: ' (1 = linear)' }), /^a: must be a number > 0 \(1 = linear\), got number 0$/)
  rejects(() => number('w', Number.NaN, 1), /^w: must be a number >= 0, got number NaN$/)
  assert.deepEqual(record('o', { a: 1 }, '{ a }'), { a: 1 })
  rejects(() => record('o', [1], '{ a }'), /^o: must be an object like \{ a \}, got an array$/)
  rejects(() => record('o', null, '{ a }'), /got null/)
  const f = (): void => {}
  assert.equal(fn('f', f, '() => {}'), f)
  rejects(() => fn('f', 'x', '() => {}'), /^f: must be a function such as \(\) => \{\}, got 'x'$/)
  const clock = { now: () => 0, setTimeout: f }
  assert.equal(withMethods('clock', clock, ['now', 'setTimeout'], 'a Clock'), clock)
  rejects(() => withMethods('clock', { now: f }, ['now', 'setTimeout'], 'a Clock'), /^clock: must be a Clock with now\(\), setTimeout\(\); its setTimeout\(\) is missing$/)
  rejects(() => withMethods('clock', 5, ['now'], 'a Clock'), /^clock: must be a Clock with now\(\); got number 5$/)
})

test('backoff: every part set and in range, unknown parts rejected', () => {
  assert.deepEqual(backoff('b', undefined), { initialMs: 250, maxMs: 15_000, factor: 2, jitter: 0.2 })
  assert.deepEqual(backoff('b', { factor: 3 }, { initialMs: 200, jitter: 0.1 }), { initialMs: 200, maxMs: 15_000, factor: 3, jitter: 0.1 })
  rejects(() => backoff('b', { jitter: 2 }), /^b\.jitter: must be a number from 0 to 1 \(the random spread\), got number 2$/)
  rejects(() => backoff('b', { factor: 0.5 }), /^b\.factor: must be a number >= 1 \(the growth per attempt\)/)
  rejects(() => backoff('b', { initialMs: -1 }), /^b\.initialMs: must be a non-negative number of milliseconds/)
  rejects(() => backoff('b', { intialMs: 5 }), /^b\.intialMs: unknown option \(did you mean 'initialMs'\?\)/)
  rejects(() => backoff('b', 5), /^b: must be an object like/)
})
