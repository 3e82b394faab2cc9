/**
 * Whether a request target is `path`, with or without a query string. Asked of
 * every request (the probe and metrics routes), so it compares in place: no
 * indexOf('?') and no sliced copy for the common URL that is neither.
 */
export function isPath (url: string, path: string): boolean {
  const n = path.length
  if (url.length === n) return url === path
  return url.length > n && url.charCodeAt(n) === 63 /* ? */ && url.startsWith(path)
}
