// The two Envoys the conformance suite runs against, behind one shape: the devkit's stand-in
// (plain mode: listener stats by bound address `127.0.0.1_<port>`, HCMs `ingress_http` /
// `outbound_http`) and real Envoy 1.40.0 with the same HCM names (the 'contour' layout of
// helpers/envoy.ts, listener stats `ingress` / `egress`, admin on TCP). Both
// front the same app with an inbound listener and an outbound one, drain time 2 s, immediate.
import { startEnvoy } from '@lameduck/devkit'
import { Agent, request } from 'undici'
import { startRealEnvoy } from './envoy.ts'

export type TargetName = 'stand-in' | 'real'
export const TARGETS: readonly TargetName[] = ['stand-in', 'real']

export interface AdminAnswer { status: number, headers: Record<string, string | string[] | undefined>, body: string }

export interface EnvoyTarget {
  name: TargetName
  adminUrl: string
  inboundUrl: string
  inboundPort: number
  outboundUrl: string
  /** `listener.<this>.downstream_cx_active` of the inbound listener. */
  inboundStatAddress: string
  admin: (method: string, path: string) => Promise<AdminAnswer>
  /** Resolves once the process (real) or the server (stand-in) is gone. */
  exited: Promise<unknown>
  stop: () => Promise<void>
}

export interface TargetOptions {
  upstream: string
  outbound?: string
  drainTimeS?: number
}

export async function startTarget (name: TargetName, o: TargetOptions): Promise<EnvoyTarget> {
  const drainTimeS = o.drainTimeS ?? 2
  if (name === 'real') {
    const e = await startRealEnvoy({ upstream: o.upstream, outbound: o.outbound, layout: 'contour', drainTimeS, drainStrategy: 'immediate' })
    return { name, adminUrl: e.adminUrl, inboundUrl: e.inboundUrl, inboundPort: e.inboundPort, outboundUrl: e.outboundUrl, inboundStatAddress: e.inboundStatAddress, admin: e.admin, exited: e.exited, stop: e.stop }
  }
  const e = await startEnvoy({ upstream: o.upstream, outbound: o.outbound ?? o.upstream, drainTimeMs: drainTimeS * 1000, drainStrategy: 'immediate' })
  const dispatcher = new Agent()
  const admin = async (method: string, path: string): Promise<AdminAnswer> => {
    const res = await request(e.adminUrl + path, { method: method as 'GET', dispatcher })
    return { status: res.statusCode, headers: res.headers, body: await res.body.text() }
  }
  return {
    name,
    adminUrl: e.adminUrl,
    inboundUrl: e.url,
    inboundPort: e.port,
    outboundUrl: e.outboundUrl!,
    inboundStatAddress: `127.0.0.1_${e.port}`,
    admin,
    exited: e.closed,
    stop: async () => { await e.close(); if (!dispatcher.closed) await dispatcher.close() }
  }
}
