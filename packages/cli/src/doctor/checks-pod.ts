// Pod checks added for the clusters of 2026: an httpGet preStop that cannot
// reach the loopback-only admin, an entrypoint that swallows SIGTERM, and
// minReadySeconds against the app's warmup.
import { DEFAULT_ADMIN_PORT, type PropagationWindow } from '@lameduck/core'
import { formatSeconds as sec } from '../args.ts'
import type { AppConfig } from './app-config.ts'
import type { CheckCode } from './catalog.ts'
import type { Report } from './checks.ts'
import { isRecord } from './manifest.ts'
import { describeHook, get, type Container, type PodTemplate } from './pod.ts'

/** Text from the manifest in a message: one line, at most 120 characters. */
function clip (text: string): string {
  const line = text.slice(0, 240).replace(/\s+/g, ' ')
  return line.length > 120 || text.length > 240 ? `${line.slice(0, 120)}… (${text.length} characters)` : line
}

export interface PodFacts { window: PropagationWindow, windowWhy: string, config: AppConfig, maxRequestMs: number }

export function checkPodExtras (pod: PodTemplate, apps: Container[], facts: PodFacts, mark: (code: CheckCode) => void, report: Report): void {
  for (const c of apps) {
    mark('prestop-http-loopback')
    httpGetLoopback(c, report)
    mark('sigterm-not-forwarded')
    sigterm(c, facts, report)
  }
  if (pod.object.kind !== 'Pod') {
    mark('min-ready-short')
    minReady(pod, facts, report)
  }
}

function httpGetLoopback (c: Container, report: Report): void {
  const http = get(c.value, ['lifecycle', 'preStop', 'httpGet'])
  if (!isRecord(http)) return
  const port = http.port
  const path = clip(String(http.path ?? '/'))
  const admin = port === DEFAULT_ADMIN_PORT || String(port) === String(DEFAULT_ADMIN_PORT) || /^\/(offline|drain)\b/.test(path)
  const host = typeof http.host === 'string' ? clip(http.host) : ''
  if (!admin && !/^(127\.|localhost$|::1$)/.test(host)) return
  report('error', 'prestop-http-loopback', [...c.path, 'lifecycle', 'preStop', 'httpGet'], {
    container: c.name,
    message: `container '${c.name}': preStop httpGet ${host === '' ? '' : `${host}:`}${String(port)}${path} is sent by kubelet from the node${host === '' ? ' to the pod IP' : ', where 127.0.0.1 is the node\'s own loopback'}, but the lameduck admin listens on 127.0.0.1 inside the pod: the hook fails (FailedPreStopHook), kubelet sends SIGTERM at once and consumers still route here for the window`,
    fix: 'use lifecycle.preStop.exec.command: ["lameduck", "prestop"] (it runs inside the container), or where the image has no CLI, lifecycle.preStop.sleep.seconds for the window and let the app\'s SIGTERM path drain'
  })
}

// PID 1 wrappers that do not pass SIGTERM on to node (npm and friends start node
// as a child and, as PID 1, do not forward or wait; dash/ash `sh -c` runs the
// script as a child unless it execs).
const PACKAGE_MANAGERS = /^(?:.*\/)?(npm|yarn|pnpm|npx)$/
const SHELLS = /^(?:.*\/)?(sh|bash|ash|dash)$/

function sigterm (c: Container, facts: PodFacts, report: Report): void {
  const command = Array.isArray(c.value.command) ? c.value.command.map(String) : []
  const args = Array.isArray(c.value.args) ? c.value.args.map(String) : []
  const argv = [...command, ...args]
  if (command.length === 0) return // the image's ENTRYPOINT: not in the manifest
  let why: string | undefined
  if (PACKAGE_MANAGERS.test(argv[0]!)) {
    why = `'${clip(argv.join(' '))}' runs node as a child of ${argv[0]!.split('/').pop()!}, which as PID 1 does not pass SIGTERM on`
  } else if (SHELLS.test(argv[0]!) && argv.includes('-c')) {
    const script = argv[argv.indexOf('-c') + 1] ?? ''
    const last = script.split(/;|&&|\n/).map((s) => s.trim()).filter(Boolean).pop() ?? ''
    if (/^exec\s+(\S*\/)?(npm|yarn|pnpm|npx)\s/.test(last)) {
      why = `'${clip(last)}' makes ${last.split(/\s+/)[1]!.split('/').pop()!} PID 1, which runs node as a child and does not pass SIGTERM on`
    } else if (!/^exec\s/.test(last) && /(^|\s)(node|npm|yarn|pnpm|npx)(\s|$)/.test(script)) {
      why = `'${clip(argv[0]!)} -c' starts node as a child without exec: the shell is PID 1 and does not pass SIGTERM on`
    }
  }
  if (why === undefined) return
  const hook = describeHook(get(c.value, ['lifecycle', 'preStop']))
  const relies = hook.offline !== 'wait'
  const path = [...c.path, 'command']
  if (relies) {
    report('error', 'sigterm-not-forwarded', path, {
      container: c.name,
      message: `container '${c.name}': ${why}, and the app relies on its SIGTERM path (${hook.present ? `the preStop '${hook.text}' does not take it offline` : 'no preStop'}): the app never drains, keeps serving until kubelet's SIGKILL at the grace period and then drops what is in flight`,
      fix: 'run node directly (command: ["node", "server.js"]), or "exec node server.js" in the shell, or an init that forwards signals (tini, dumb-init); or use lifecycle.preStop.exec.command: ["lameduck", "prestop"]'
    })
  } else {
    report('warning', 'sigterm-not-forwarded', path, {
      container: c.name,
      message: `container '${c.name}': ${why}. The preStop takes the app offline first, so nothing is lost, but the process never exits on SIGTERM: the pod waits for SIGKILL at terminationGracePeriodSeconds and the rollout is that much slower`,
      fix: 'run node directly (command: ["node", "server.js"]), or "exec node server.js" in the shell, or an init that forwards signals (tini, dumb-init)'
    })
  }
}

function minReady (pod: PodTemplate, facts: PodFacts, report: Report): void {
  const warm = facts.config.warmupMs
  if (warm <= 0) return
  const raw = get(pod.object.value, ['spec', 'minReadySeconds'])
  const min = typeof raw === 'number' ? raw : 0
  if (min * 1000 >= warm) return
  report('warning', 'min-ready-short', typeof raw === 'number' ? ['spec', 'minReadySeconds'] : ['spec'], {
    message: `minReadySeconds is ${min}${typeof raw === 'number' ? '' : ' (unset)'}, but the app warms up for ${sec(warm)} (annotation lameduck.dev/warmup-ms): the rollout stops the next old pod while the new one takes only a fraction of its share, so the remaining pods carry the rest and a fast rollout replaces every warm pod with cold ones`,
    fix: `set spec.minReadySeconds: ${Math.ceil(warm / 1000)} (\`lameduck plan --warmup-ms ${warm}\` prints it)`
  })
}
