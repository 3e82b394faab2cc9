import { createHash, timingSafeEqual } from 'node:crypto'

/** Returns a checker for `authorization: Bearer <token>` that compares in constant time. */
export function bearerChecker (token: string): (header: string | undefined) => boolean {
  const expected = createHash('sha256').update(token).digest()
  return (header) => {
    if (typeof header !== 'string' || !header.startsWith('Bearer ')) return false
    // Hashing both sides gives equal lengths, so timingSafeEqual leaks neither content nor length.
    const given = createHash('sha256').update(header.slice(7)).digest()
    return timingSafeEqual(given, expected)
  }
}
