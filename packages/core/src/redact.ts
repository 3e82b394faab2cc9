// One redaction for every adapter: what goes into describe(), /status, a log line
// or an error message passes through here first. It hides URL userinfo
// (`http://user:pass@host`), the values of secret-like parameters (`?token=`,
// `password=`, `"secretKey":"..."`, Nacos' `ak`/`signature`) and bearer/basic
// credentials, in URLs and in free text such as an HTTP client's error message.
// It only scans forward (no backtracking over unbounded runs), so hostile text
// costs linear time.

export const REDACTED = '***'

// Compared after lower-casing and dropping '-', '_' and '.': 'access_key', 'Spas-SecurityToken'.
const SECRET_PARTS = ['password', 'passwd', 'secret', 'token', 'accesskey', 'apikey', 'credential', 'signature', 'privatekey']
const SECRET_NAMES = new Set(['pass', 'pwd', 'ak', 'sk', 'auth', 'authorization', 'sig', 'key', 'cookie'])

/** A parameter or field name whose value is a secret (password, token, secretKey, accessKey, ...). */
export function isSecretName (name: string): boolean {
  const n = name.toLowerCase().replace(/[-_.]/g, '')
  return SECRET_NAMES.has(n) || SECRET_PARTS.some((part) => n.includes(part))
}

// `name=value`, `name: value`, `"name":"value"` after a delimiter (looked behind, not
// consumed, so a pair right after another's separator is still seen). Only the name
// and separator are matched: a bounded amount of work per position.
const KEY = /(?<=^|[?&;,=:\s{([])(["']?)([A-Za-z][\w.-]{0,63})\1(\s?[=:]\s?)(["']?)/g
const AUTH_SCHEME = /\b(Bearer|Basic)(\s+)(?!\*\*\*)[\w.~+/=-]+/gi
const AUTH_SCHEME_NAME = /^(bearer|basic)$/i
// Where an unquoted value ends.
const VALUE_END = new Set([...' \t\r\n\f\v&#;,?"\'<>})'].map((c) => c.charCodeAt(0)))

/** `text` with URL userinfo, secret-like parameter values and bearer/basic credentials replaced by ***. */
export function redactText (text: string): string {
  return redactCounted(text, { steps: 0 })
}

/** Counts the work: characters scanned by hand plus key matches (each a bounded amount of regex work). */
export interface RedactMeter { steps: number }

/** redactText with its work counted, for tests that check it stays linear on hostile input. */
export function redactCounted (text: string, meter: RedactMeter): string {
  if (typeof text !== 'string' || text === '') return text
  let out = redactUserinfo(text, meter)
  out = out.replace(AUTH_SCHEME, (_m, scheme: string, space: string) => { meter.steps++; return `${scheme}${space}${REDACTED}` })
  return redactPairs(out, meter)
}

function redactPairs (text: string, meter: RedactMeter): string {
  let out = ''
  let copied = 0
  KEY.lastIndex = 0
  for (let m = KEY.exec(text); m !== null; m = KEY.exec(text)) {
    meter.steps++
    // The name first: only a secret's value is scanned (and skipped), so the work stays linear.
    if (!isSecretName(m[2]!)) continue
    const quote = m[4]!
    const start = m.index + m[0].length
    let end = start
    if (quote !== '') {
      while (end < text.length && text[end] !== quote && text[end] !== '\n') end++
    } else {
      while (end < text.length && !VALUE_END.has(text.charCodeAt(end))) end++
    }
    meter.steps += end - start
    const value = text.slice(start, end)
    // A scanned value is never scanned again: linear however the pairs nest.
    KEY.lastIndex = Math.max(KEY.lastIndex, end)
    // `password: Bearer ***` is done already; `http://...` after `name:` is a URL, not a value.
    if (value === '' || value === REDACTED || AUTH_SCHEME_NAME.test(value) || value.startsWith('//')) continue
    out += text.slice(copied, start) + REDACTED
    copied = end
  }
  return copied === 0 ? text : out + text.slice(copied)
}

/** A URL (string or URL) as it may be shown: userinfo and secret parameters replaced by ***. */
export function redactUrl (url: string | URL): string {
  return redactText(String(url))
}

/** `scheme://user:pass@host` -> `scheme://***@host`, for every URL in the text. */
function redactUserinfo (text: string, meter: RedactMeter): string {
  let out = ''
  let copied = 0
  let from = 0
  for (;;) {
    const scheme = text.indexOf('://', from)
    if (scheme < 0) break
    const start = scheme + 3
    let end = start
    let at = -1
    // The authority ends at '/', '?', '#', whitespace or a quote; its last '@' ends the userinfo.
    for (; end < text.length; end++) {
      const c = text.charCodeAt(end)
      if (c === 0x2f || c === 0x3f || c === 0x23 || c === 0x22 || c === 0x27 || c === 0x3c || c === 0x3e || c <= 0x20) break
      if (c === 0x40) at = end
    }
    meter.steps += end - start + 1
    if (at > start) {
      out += text.slice(copied, start) + REDACTED
      copied = at
    }
    from = Math.max(end, start)
  }
  return copied === 0 ? text : out + text.slice(copied)
}

/**
 * `text` cut to at most `maxChars` characters plus how long it was, for text that came
 * from outside (metadata, a response, an error) and is kept or shown: a 2 MB value must
 * not become 2 MB in every log line and status answer. A surrogate pair is never split.
 * The kept part is a fresh copy: V8's slices point into their parent, so a plain slice
 * of a huge string kept the whole of it alive.
 */
export function truncateText (text: string, maxChars = 200): string {
  if (typeof text !== 'string' || text.length <= maxChars) return text
  let end = Math.max(0, Math.floor(maxChars))
  const last = text.charCodeAt(end - 1)
  if (last >= 0xd800 && last <= 0xdbff) end--
  return `${text.slice(0, end).split('').join('')}\u2026 (${text.length} characters)`
}

/**
 * The error, with its message, stack and causes redacted in place (so every later
 * log or wrap of it is clean); returned for chaining. Non-errors pass through.
 */
export function redactError<T> (err: T): T {
  const seen = new Set<unknown>()
  let e: unknown = err
  while (e instanceof Error && !seen.has(e)) {
    seen.add(e)
    const message = redactText(e.message)
    if (message !== e.message) e.message = message
    if (typeof e.stack === 'string') {
      const stack = redactText(e.stack)
      if (stack !== e.stack) e.stack = stack
    }
    e = e.cause
  }
  return err
}

/**
 * A copy of `value` safe to show: strings redacted, the values of secret-like keys
 * replaced by ***, errors as redacted copies.
 */
export function redactValue (value: unknown, depth = 8): unknown {
  if (typeof value === 'string') return redactText(value)
  if (value instanceof URL) return redactUrl(value)
  if (value instanceof Error) return redactedErrorCopy(value)
  if (typeof value !== 'object' || value === null || depth <= 0) return value
  if (Array.isArray(value)) return value.map((v) => redactValue(v, depth - 1))
  if (!isPlain(value)) return value
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(value)) {
    out[k] = isSecretName(k) && v !== null && v !== undefined && v !== '' && typeof v !== 'boolean' ? REDACTED : redactValue(v, depth - 1)
  }
  return out
}

/**
 * A redacted copy of an error for a log line: same name, code and status, message,
 * stack and causes redacted, none of the other fields (an HTTP client's error
 * carries the request, URL and query included).
 */
export function redactedErrorCopy (err: Error, depth = 3): Error {
  const cause = err.cause instanceof Error && depth > 0 ? redactedErrorCopy(err.cause, depth - 1) : undefined
  const copy = new Error(redactText(err.message), cause === undefined ? undefined : { cause }) as Error & { code?: unknown, status?: unknown }
  copy.name = err.name
  if (typeof err.stack === 'string') copy.stack = redactText(err.stack)
  const { code, status } = err as Error & { code?: unknown, status?: unknown }
  if (typeof code === 'string' || typeof code === 'number') copy.code = code
  if (typeof status === 'number') copy.status = status
  return copy
}

function isPlain (value: object): boolean {
  const proto = Object.getPrototypeOf(value) as unknown
  return proto === Object.prototype || proto === null
}
