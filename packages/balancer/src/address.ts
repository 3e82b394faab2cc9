/** `host:port`, with brackets around an IPv6 literal. */
export function hostPort (host: string, port: number): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]:${port}` : `${host}:${port}`
}
