// The lab's transports: what the provider serves (HTTP/1.1 or HTTP/2, cleartext or
// TLS) and the undici agent options a consumer needs to speak it.
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Agent } from 'undici'
import type { Transport } from './options.ts'

export interface TlsMaterial { key: string, cert: string }

/** What a provider process needs to serve a transport (passed to it as JSON). */
export interface ServeSpec { transport: Transport, tls?: TlsMaterial }

const COMMITTED = fileURLToPath(new URL('../../test-certs/', import.meta.url))

let cached: TlsMaterial | null = null

/**
 * A self-signed certificate for 127.0.0.1: a fresh one from `openssl` when it is on
 * the PATH, else the committed test-only one (packages/devkit/test-certs).
 */
export function tlsMaterial (): TlsMaterial {
  if (cached !== null) return cached
  const dir = mkdtempSync(join(tmpdir(), 'lameduck-lab-tls-'))
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'),
      '-days', '2', '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'], { stdio: 'ignore' })
    cached = { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'cert.pem'), 'utf8') }
  } catch {
    if (!existsSync(join(COMMITTED, 'key.pem'))) throw new Error('no openssl on the PATH and no committed test certificate in packages/devkit/test-certs')
    cached = { key: readFileSync(join(COMMITTED, 'key.pem'), 'utf8'), cert: readFileSync(join(COMMITTED, 'cert.pem'), 'utf8') }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  return cached
}

export function serveSpec (transport: Transport): ServeSpec {
  return transport === 'https' || transport === 'h2' ? { transport, tls: tlsMaterial() } : { transport }
}

export const scheme = (transport: Transport): 'http' | 'https' => transport === 'https' || transport === 'h2' ? 'https' : 'http'

/** undici Agent options that speak `transport` to the provider, trusting the lab's certificate. */
export function agentOptions (transport: Transport): Agent.Options {
  const tls = transport === 'https' || transport === 'h2' ? { connect: { ca: tlsMaterial().cert } } : {}
  if (transport === 'h2') return { ...tls, allowH2: true }
  if (transport === 'h2c') return { allowH2: true, useH2c: true } as Agent.Options
  return { ...tls, allowH2: false }
}

/** Fastify server options for the spec: `https` and/or `http2` (h2 also accepts HTTP/1.1 over TLS, as ALPN allows). */
export function fastifyServerOptions (spec: ServeSpec): Record<string, unknown> {
  switch (spec.transport) {
    case 'https': return { https: spec.tls }
    case 'h2': return { http2: true, https: { ...spec.tls, allowHTTP1: true } }
    case 'h2c': return { http2: true }
    default: return {}
  }
}
