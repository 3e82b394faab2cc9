// Reads a hook's command line for what the doctor cares about (`lameduck prestop`,
// `/offline?wait=true`, `sleep N`, `lameduck wait-drained`) in one pass over its
// words, with no regular expression: a manifest is untrusted input, and the
// backtracking regexes this replaces took minutes on a 480 KB preStop (issue 13.9).
// Every character comparison is counted in `meter.steps`, so a test can check
// that the work grows linearly with the input, whatever the input.

/** Only this much of a hook's command is read: real preStop commands are a few hundred bytes. */
export const HOOK_SCAN_LIMIT = 16 * 1024

export interface CommandFacts {
  /** `lameduck prestop` (any path to the binary, e.g. /usr/local/bin/lameduck). */
  prestop: boolean
  /** A URL with `/offline?...wait=true|1|yes`. */
  offlineWait: boolean
  /** A URL with `/offline` (waiting or not). */
  offline: boolean
  /** `lameduck wait-drained`. */
  waitDrained: boolean
  /** Total seconds of `sleep N[smh]`, null when there is none. */
  sleepSeconds: number | null
  /** The command was longer than HOOK_SCAN_LIMIT and only its start was read. */
  truncated: boolean
}

export interface Meter { steps: number }

interface Word { start: number, end: number }

export function scanCommand (text: string, meter: Meter = { steps: 0 }): CommandFacts {
  const truncated = text.length > HOOK_SCAN_LIMIT
  const s = truncated ? text.slice(0, HOOK_SCAN_LIMIT) : text
  const facts: CommandFacts = { prestop: false, offlineWait: false, offline: false, waitDrained: false, sleepSeconds: null, truncated }
  let previous: Word | undefined
  let i = 0
  while (i < s.length) {
    while (i < s.length && isSpace(s.charCodeAt(i))) { meter.steps++; i++ }
    if (i >= s.length) break
    const start = i
    while (i < s.length && !isSpace(s.charCodeAt(i))) { meter.steps++; i++ }
    const word = { start, end: i }
    readWord(s, word, previous, facts, meter)
    previous = word
  }
  return facts
}

function readWord (s: string, word: Word, previous: Word | undefined, facts: CommandFacts, meter: Meter): void {
  const afterLameduck = previous !== undefined && find(s, 'lameduck', previous.start, previous.end, meter) >= 0
  if (afterLameduck && startsWord(s, 'prestop', word, meter)) facts.prestop = true
  if (afterLameduck && startsWord(s, 'wait-drained', word, meter)) facts.waitDrained = true
  if (findOffline(s, word, meter) >= 0) facts.offline = true
  // `/offline?` then, anywhere later in the same word, `wait=true` (the first `/offline?` sees every later one).
  const query = find(s, '/offline?', word.start, word.end, meter)
  if (query >= 0 && waitTrue(s, query + '/offline?'.length, word.end, meter)) facts.offlineWait = true
  if (previous !== undefined && endsWithSleep(s, previous, meter)) {
    const seconds = duration(s, word, meter)
    if (seconds !== null) facts.sleepSeconds = (facts.sleepSeconds ?? 0) + seconds
  }
}

/** First `/offline` in the word followed by a word boundary. */
function findOffline (s: string, word: Word, meter: Meter): number {
  let from = word.start
  for (;;) {
    const at = find(s, '/offline', from, word.end, meter)
    if (at < 0) return -1
    const next = at + '/offline'.length
    if (next >= word.end || !isWordChar(s.charCodeAt(next))) return at
    from = at + 1
  }
}

/** `wait=true|1|yes` at a word boundary, somewhere in s[from, end). */
function waitTrue (s: string, from: number, end: number, meter: Meter): boolean {
  for (let at = find(s, 'wait=', from, end, meter); at >= 0; at = find(s, 'wait=', at + 1, end, meter)) {
    if (at > 0 && isWordChar(s.charCodeAt(at - 1))) continue
    const value = at + 'wait='.length
    for (const v of ['true', '1', 'yes']) {
      if (matchesAt(s, v, value, end, meter) && (value + v.length >= end || !isWordChar(s.charCodeAt(value + v.length)))) return true
    }
  }
  return false
}

/** The word starts with `prefix`, followed by its end or a non-word character (`prestop;`). */
function startsWord (s: string, prefix: string, word: Word, meter: Meter): boolean {
  const end = word.start + prefix.length
  return matchesAt(s, prefix, word.start, word.end, meter) && (end >= word.end || !isWordChar(s.charCodeAt(end)))
}

/** The word ends in `sleep` at a word boundary (`sleep`, `;sleep`). */
function endsWithSleep (s: string, word: Word, meter: Meter): boolean {
  const at = word.end - 'sleep'.length
  return at >= word.start && matchesAt(s, 'sleep', at, word.end, meter) && (at === word.start || !isWordChar(s.charCodeAt(at - 1)))
}

/** `N`, `N.M`, with an optional s/m/h, then the word's end or a character that is neither a word character nor a dot. */
function duration (s: string, word: Word, meter: Meter): number | null {
  let i = word.start
  const digits = (): void => { while (i < word.end && isDigit(s.charCodeAt(i))) { meter.steps++; i++ } }
  digits()
  if (i === word.start) return null
  if (s.charCodeAt(i) === 0x2e /* . */ && i + 1 < word.end && isDigit(s.charCodeAt(i + 1))) { i++; digits() }
  const value = Number(s.slice(word.start, i))
  const unit = i < word.end ? s[i] : ''
  const scale = unit === 'm' ? 60 : unit === 'h' ? 3600 : unit === 's' ? 1 : 0
  if (scale !== 0) i++
  if (i < word.end) {
    const c = s.charCodeAt(i)
    if (isWordChar(c) || c === 0x2e) return null
  }
  return value * (scale || 1)
}

/** indexOf within s[from, end), by hand so every comparison is counted: at most needle.length per character. */
function find (s: string, needle: string, from: number, end: number, meter: Meter): number {
  for (let at = from; at + needle.length <= end; at++) {
    if (matchesAt(s, needle, at, end, meter)) return at
  }
  return -1
}

function matchesAt (s: string, needle: string, at: number, end: number, meter: Meter): boolean {
  if (at + needle.length > end) return false
  for (let j = 0; j < needle.length; j++) {
    meter.steps++
    if (s.charCodeAt(at + j) !== needle.charCodeAt(j)) return false
  }
  return true
}

function isDigit (c: number): boolean { return c >= 0x30 && c <= 0x39 }

/** \w: ASCII letters, digits and underscore. */
function isWordChar (c: number): boolean {
  return isDigit(c) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f
}

/** \s as JavaScript defines it. */
function isSpace (c: number): boolean {
  if (c <= 0x20) return c === 0x20 || (c >= 0x09 && c <= 0x0d)
  return c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff
}
