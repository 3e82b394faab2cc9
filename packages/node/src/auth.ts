import { crypto } from './builtins.ts'

const SCHEME = 'bearer'

/**
 * Returns a checker for `authorization: Bearer <token>` that compares in constant time.
 * The scheme matches in any case (RFC 9110 section 11.1: auth schemes are case-insensitive,
 * so `bearer` and `BEARER` are as valid as `Bearer`); one or more spaces may follow it.
 */
export function bearerChecker (token: string): (header: string | undefined) => boolean {
  const expected = digest(token)
  return (header) => {
    if (typeof header !== 'string' || header.length <= SCHEME.length || header.charCodeAt(SCHEME.length) !== 0x20) return false
    if (header.slice(0, SCHEME.length).toLowerCase() !== SCHEME) return false
    let start = SCHEME.length + 1
    // Tokens never start with a space (admin.token is validated), so skipping extra spaces is unambiguous.
    while (header.charCodeAt(start) === 0x20) start++
    // Hashing both sides gives equal lengths, so timingSafeEqual leaks neither content nor length.
    return crypto().timingSafeEqual(digest(header.slice(start)), expected)
  }
}

function digest (text: string): Buffer {
  return crypto().createHash('sha256').update(text).digest()
}
