// The doctor's checks for the clusters of 2026: each bad manifest gets its
// finding at the marked line (`#<`), with what is lost and the fix, and the
// fixed twin gets no finding at all.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { doctor } from '../src/commands/doctor.ts'
import { EXIT } from '../src/command.ts'
import type { DoctorResult } from '../src/doctor/report.ts'
import { fileURLToPath } from 'node:url'
import { runCommand } from './helpers.ts'

const stdin = (text: string): NodeJS.ReadableStream => (async function * () { yield Buffer.from(text) })() as unknown as NodeJS.ReadableStream

async function doctorJson (yaml: string, ...flags: string[]): Promise<{ code: number, result: DoctorResult, stderr: string }> {
  const run = await runCommand(doctor, ['-', '--json', ...flags], { stdin: stdin(yaml) })
  return { code: run.code, result: JSON.parse(run.stdout) as DoctorResult, stderr: run.stderr }
}

interface Shape {
  replicas?: string
  minReady?: string
  meta?: string
  labels?: string
  annotations?: string
  grace?: number
  app?: string
  hook?: string
  initContainers?: string
  containers?: string
  rest?: string
  pdb?: boolean
}

/** A Deployment that passes doctor, with pieces swapped in. */
function manifest (s: Shape = {}): string {
  return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: orders${s.meta ?? ''}
spec:
  replicas: ${s.replicas ?? '3'}${s.minReady ?? ''}
  selector:
    matchLabels: { app: orders }
  template:
    metadata:
      labels:
        app: orders${s.labels ?? ''}
      annotations:
        lameduck.dev/windows: kubernetes
        lameduck.dev/max-request-ms: "5000"${s.annotations ?? ''}
    spec:
      terminationGracePeriodSeconds: ${s.grace ?? 30}${s.initContainers ?? ''}
      containers:
        - name: app
          image: registry.example.com/orders:1.0.0${s.app ?? ''}
          ports: [{ containerPort: 3000 }]
          lifecycle:
            preStop:
${s.hook ?? '              exec: { command: ["lameduck", "prestop"] }'}
          readinessProbe:
            httpGet: { path: /health/ready, port: 3000 }
            periodSeconds: 2
            failureThreshold: 2${s.containers ?? ''}
${s.pdb === false
? ''
: `---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: orders
spec:
  maxUnavailable: 1
  selector:
    matchLabels: { app: orders }
`}${s.rest ?? ''}`
}

const SERVICE = `---
apiVersion: v1
kind: Service
metadata:
  name: orders
spec:
  selector: { app: orders }
  ports: [{ port: 80, targetPort: 3000 }]
`

interface Case { name: string, code: string, severity: 'error' | 'warning' | 'info', bad: string, fixed: string, flags?: string[], message: RegExp }

const CASES: Case[] = [
  {
    name: 'httpGet preStop to the loopback-only admin',
    code: 'prestop-http-loopback',
    severity: 'error',
    bad: manifest({ hook: '              httpGet: { path: "/offline?wait=true", port: 54199 } #<' }),
    fixed: manifest(),
    message: /kubelet from the node to the pod IP.*127\.0\.0\.1 inside the pod/
  },
  {
    name: 'httpGet preStop with host 127.0.0.1',
    code: 'prestop-http-loopback',
    severity: 'error',
    bad: manifest({ hook: '              httpGet: { host: 127.0.0.1, path: /drain, port: 8080 } #<' }),
    fixed: manifest(),
    message: /node's own loopback/
  },
  {
    name: 'npm start as PID 1 while the app relies on SIGTERM (sleep preStop)',
    code: 'sigterm-not-forwarded',
    severity: 'error',
    bad: manifest({ app: '\n          command: ["npm", "start"] #<', hook: '              sleep: { seconds: 15 }', grace: 45 }),
    fixed: manifest({ app: '\n          command: ["node", "server.js"]', hook: '              sleep: { seconds: 15 }', grace: 45 }),
    message: /relies on its SIGTERM path.*SIGKILL/
  },
  {
    name: 'sh -c without exec, with lameduck prestop: only slower',
    code: 'sigterm-not-forwarded',
    severity: 'warning',
    bad: manifest({ app: '\n          command: ["/bin/sh", "-c", "node migrate.js && node server.js"] #<' }),
    fixed: manifest({ app: '\n          command: ["/bin/sh", "-c", "node migrate.js && exec node server.js"]' }),
    message: /waits for SIGKILL/
  },
  {
    name: 'sh -c "exec npm start": npm as PID 1',
    code: 'sigterm-not-forwarded',
    severity: 'error',
    bad: manifest({ app: '\n          command: ["sh", "-c", "exec npm start"] #<', hook: '              sleep: { seconds: 15 }', grace: 45 }),
    fixed: manifest({ app: '\n          command: ["sh", "-c", "exec node server.js"]', hook: '              sleep: { seconds: 15 }', grace: 45 }),
    message: /makes npm PID 1/
  },
  {
    name: 'minReadySeconds shorter than the warmup',
    code: 'min-ready-short',
    severity: 'warning',
    bad: manifest({ minReady: '\n  minReadySeconds: 10 #<', annotations: '\n        lameduck.dev/warmup-ms: "60000"' }),
    fixed: manifest({ minReady: '\n  minReadySeconds: 60', annotations: '\n        lameduck.dev/warmup-ms: "60000"' }),
    message: /warms up for 60 s/
  },
  {
    name: 'single replica with readinessWhileDraining fail',
    code: 'readiness-topology',
    severity: 'warning',
    bad: manifest({ replicas: '1 #<', pdb: false }),
    fixed: manifest({ replicas: '1', pdb: false, annotations: '\n        lameduck.dev/readiness-while-draining: serve' }),
    message: /opts the pod out/
  },
  {
    name: 'replicated workload without a PodDisruptionBudget',
    code: 'pdb-missing',
    severity: 'warning',
    bad: manifest({ pdb: false }).replace('metadata:\n  name: orders\nspec:\n  replicas', 'metadata: #<\n  name: orders\nspec:\n  replicas'),
    fixed: manifest(),
    message: /evict several at once/
  },
  {
    name: 'a PodDisruptionBudget that allows no eviction',
    code: 'pdb-too-tight',
    severity: 'warning',
    bad: manifest().replace('maxUnavailable: 1', 'maxUnavailable: 0 #<'),
    fixed: manifest(),
    message: /allows no eviction/
  },
  {
    name: 'AWS target group deregistration delay (default 300 s) longer than the window',
    code: 'lb-deregistration-delay',
    severity: 'warning',
    bad: manifest({ rest: SERVICE.replace('  name: orders\n', '  name: orders\n  annotations:\n    service.beta.kubernetes.io/aws-load-balancer-target-group-attributes: "preserve_client_ip.enabled=true" #<\n') }),
    fixed: manifest({ rest: SERVICE.replace('  name: orders\n', '  name: orders\n  annotations:\n    service.beta.kubernetes.io/aws-load-balancer-target-group-attributes: "deregistration_delay.timeout_seconds=10"\n') }),
    message: /AWS default\) is 300 s, longer than the 15 s window/
  },
  {
    name: 'GKE BackendConfig connection draining longer than the window',
    code: 'lb-deregistration-delay',
    severity: 'warning',
    bad: manifest({ rest: SERVICE.replace('  name: orders\n', '  name: orders\n  annotations:\n    cloud.google.com/backend-config: \'{"default": "orders"}\'\n') + '---\napiVersion: cloud.google.com/v1\nkind: BackendConfig\nmetadata:\n  name: orders\nspec:\n  connectionDraining:\n    drainingTimeoutSec: 60 #<\n' }),
    fixed: manifest({ rest: SERVICE.replace('  name: orders\n', '  name: orders\n  annotations:\n    cloud.google.com/backend-config: \'{"default": "orders"}\'\n') + '---\napiVersion: cloud.google.com/v1\nkind: BackendConfig\nmetadata:\n  name: orders\nspec:\n  connectionDraining:\n    drainingTimeoutSec: 10\n' }),
    message: /drainingTimeoutSec\) is 60 s/
  },
  {
    name: 'ALB Ingress deregistration delay',
    code: 'lb-deregistration-delay',
    severity: 'warning',
    bad: manifest({ rest: SERVICE + '---\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: orders\n  annotations:\n    alb.ingress.kubernetes.io/target-group-attributes: deregistration_delay.timeout_seconds=120 #<\nspec:\n  ingressClassName: alb\n  defaultBackend:\n    service: { name: orders, port: { number: 80 } }\n' }),
    fixed: manifest({ rest: SERVICE + '---\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: orders\n  annotations:\n    alb.ingress.kubernetes.io/target-group-attributes: deregistration_delay.timeout_seconds=15\nspec:\n  ingressClassName: alb\n  defaultBackend:\n    service: { name: orders, port: { number: 80 } }\n' }),
    message: /ALB target group's deregistration_delay is 120 s/
  },
  {
    name: 'an HTTPRoute to pods whose window has no endpoint term',
    code: 'route-no-endpoint-lag',
    severity: 'warning',
    bad: manifest({ rest: SERVICE + '---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata:\n  name: orders\nspec:\n  parentRefs: [{ name: web }]\n  rules:\n    - backendRefs:\n        - name: orders #<\n          port: 80\n' }).replace('lameduck.dev/windows: kubernetes', 'lameduck.dev/windows: eureka-node').replace('terminationGracePeriodSeconds: 30', 'terminationGracePeriodSeconds: 120'),
    fixed: manifest({ rest: SERVICE + '---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata:\n  name: orders\nspec:\n  parentRefs: [{ name: web }]\n  rules:\n    - backendRefs:\n        - name: orders\n          port: 80\n' }),
    message: /balances over the EndpointSlices itself/
  },
  {
    name: 'Envoy Gateway drainTimeout shorter than the longest request',
    code: 'envoy-gateway-shutdown',
    severity: 'warning',
    bad: manifest({ grace: 120, rest: '---\napiVersion: gateway.envoyproxy.io/v1alpha1\nkind: EnvoyProxy\nmetadata:\n  name: web\nspec:\n  shutdown:\n    drainTimeout: 1m #<\n    minDrainDuration: 15s\n' }).replace('lameduck.dev/max-request-ms: "5000"', 'lameduck.dev/max-request-ms: "90000"'),
    fixed: manifest({ rest: '---\napiVersion: gateway.envoyproxy.io/v1alpha1\nkind: EnvoyProxy\nmetadata:\n  name: web\nspec:\n  shutdown:\n    drainTimeout: 60s\n    minDrainDuration: 15s\n' }),
    message: /drainTimeout is 60 s, shorter than the 90 s longest request/
  },
  {
    name: 'Envoy Gateway default minDrainDuration under the endpoint term',
    code: 'envoy-gateway-shutdown',
    severity: 'warning',
    bad: manifest({ rest: '---\napiVersion: gateway.envoyproxy.io/v1alpha1\nkind: EnvoyProxy\nmetadata:\n  name: web\nspec: #<\n  logging: {}\n' }),
    fixed: manifest({ rest: '---\napiVersion: gateway.envoyproxy.io/v1alpha1\nkind: EnvoyProxy\nmetadata:\n  name: web\nspec:\n  shutdown:\n    minDrainDuration: 20s\n' }),
    message: /minDrainDuration is 10 s \(the default\)/
  },
  {
    name: 'a BackendTrafficPolicy slow start that differs from the warmup',
    code: 'warmup-mismatch',
    severity: 'warning',
    bad: manifest({ annotations: '\n        lameduck.dev/warmup-ms: "30000"', minReady: '\n  minReadySeconds: 30', rest: SERVICE + '---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata:\n  name: orders\nspec:\n  rules:\n    - backendRefs: [{ name: orders, port: 80 }]\n---\napiVersion: gateway.envoyproxy.io/v1alpha1\nkind: BackendTrafficPolicy\nmetadata:\n  name: orders\nspec:\n  targetRefs: [{ group: gateway.networking.k8s.io, kind: HTTPRoute, name: orders }]\n  loadBalancer:\n    type: RoundRobin\n    slowStart:\n      window: 5s #<\n' }),
    fixed: manifest({ annotations: '\n        lameduck.dev/warmup-ms: "30000"', minReady: '\n  minReadySeconds: 30', rest: SERVICE + '---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata:\n  name: orders\nspec:\n  rules:\n    - backendRefs: [{ name: orders, port: 80 }]\n---\napiVersion: gateway.envoyproxy.io/v1alpha1\nkind: BackendTrafficPolicy\nmetadata:\n  name: orders\nspec:\n  targetRefs: [{ group: gateway.networking.k8s.io, kind: HTTPRoute, name: orders }]\n  loadBalancer:\n    type: RoundRobin\n    slowStart:\n      window: 30s\n' }),
    message: /full share before it is warm/
  },
  {
    name: 'a DestinationRule warmup that differs from the app\'s',
    code: 'warmup-mismatch',
    severity: 'warning',
    bad: manifest({ annotations: '\n        lameduck.dev/warmup-ms: "30000"', minReady: '\n  minReadySeconds: 30', rest: SERVICE + '---\napiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata:\n  name: orders\nspec:\n  host: orders.default.svc.cluster.local\n  trafficPolicy:\n    loadBalancer:\n      simple: LEAST_REQUEST\n      warmupDurationSecs: 90s #<\n' }),
    fixed: manifest({ annotations: '\n        lameduck.dev/warmup-ms: "30000"', minReady: '\n  minReadySeconds: 30', rest: SERVICE + '---\napiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata:\n  name: orders\nspec:\n  host: orders.default.svc.cluster.local\n  trafficPolicy:\n    loadBalancer:\n      simple: LEAST_REQUEST\n      warmupDurationSecs: 30s\n' }),
    message: /holds a warm pod back/
  },
  {
    name: 'ingress-nginx named as retired',
    code: 'ingress-nginx-retired',
    severity: 'info',
    bad: manifest({ rest: SERVICE + '---\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: orders\n  annotations:\n    nginx.ingress.kubernetes.io/service-upstream: "true"\nspec:\n  ingressClassName: nginx #<\n  defaultBackend:\n    service: { name: orders, port: { number: 80 } }\n' }),
    fixed: manifest({ rest: SERVICE + '---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata:\n  name: orders\nspec:\n  rules:\n    - backendRefs: [{ name: orders, port: 80 }]\n' }),
    message: /retired in March 2026/
  },
  {
    name: 'ambient pod with a sidecar drain configured',
    code: 'ambient-sidecar',
    severity: 'error',
    bad: manifest({ labels: '\n        istio.io/dataplane-mode: ambient', annotations: '\n        lameduck.dev/sidecar: istio #<' }),
    fixed: manifest({ labels: '\n        istio.io/dataplane-mode: ambient' }),
    message: /no per-pod proxy.*never answers/
  },
  {
    name: 'ambient pod whose window is shorter than ztunnel\'s lag',
    code: 'ambient-ztunnel-lag',
    severity: 'error',
    bad: manifest({ labels: '\n        istio.io/dataplane-mode: ambient #<' }).replace('lameduck.dev/windows: kubernetes', 'lameduck.dev/windows: none'),
    fixed: manifest({ labels: '\n        istio.io/dataplane-mode: ambient' }),
    message: /ztunnel's lag/
  },
  {
    name: 'Istio sidecar without the request gauges of the idle rule',
    code: 'istio-idle-stats',
    severity: 'warning',
    bad: manifest({ meta: '', labels: '\n        sidecar.istio.io/inject: "true"', annotations: '\n        sidecar.istio.io/nativeSidecar: "true"', grace: 60 }).replace('    metadata:\n      labels:', '    metadata: #<\n      labels:'),
    fixed: manifest({ labels: '\n        sidecar.istio.io/inject: "true"', annotations: '\n        sidecar.istio.io/nativeSidecar: "true"\n        sidecar.istio.io/statsInclusionSuffixes: downstream_rq_active,downstream_rq_total', grace: 60 }),
    message: /idle rule cannot see/
  },
  {
    name: 'istio-proxy declared where Istio 1.27 injects a native sidecar',
    code: 'istio-proxy-native-merge',
    severity: 'warning',
    flags: ['--istio-version', '1.27'],
    bad: manifest({ labels: '\n        sidecar.istio.io/inject: "true"', annotations: '\n        sidecar.istio.io/statsInclusionSuffixes: downstream_rq_active,downstream_rq_total', grace: 60, containers: '\n        - name: istio-proxy #<\n          image: auto\n          lifecycle:\n            preStop:\n              exec: { command: ["lameduck", "wait-drained"] }' }),
    fixed: manifest({ labels: '\n        sidecar.istio.io/inject: "true"', annotations: '\n        sidecar.istio.io/statsInclusionSuffixes: downstream_rq_active,downstream_rq_total', grace: 60 }),
    message: /Istio 1\.27 \(--istio-version\) injects native sidecars/
  }
]

for (const c of CASES) {
  test(`doctor: ${c.code} — ${c.name}`, async () => {
    const line = c.bad.split('\n').findIndex((l) => l.includes('#<')) + 1
    assert.ok(line > 0, 'the bad manifest marks its line')
    const bad = await doctorJson(c.bad, ...(c.flags ?? []))
    const found = bad.result.findings.filter((f) => f.code === c.code)
    assert.equal(found.length, 1, JSON.stringify(bad.result.findings, null, 2))
    const f = found[0]!
    assert.equal(f.severity, c.severity)
    assert.equal(f.line, line, `${c.code} at the marked line`)
    assert.match(f.message, c.message)
    assert.ok(f.fix.length > 20, 'names the fix')
    assert.equal(bad.code, bad.result.findings.some((x) => x.severity === 'error') ? EXIT.FAILED : EXIT.OK)
    assert.ok(bad.result.checks.some((x) => x.code === c.code), '--json lists the check as run')
    const fixed = await doctorJson(c.fixed, ...(c.flags ?? []))
    assert.deepEqual(fixed.result.findings, [])
    assert.equal(fixed.code, EXIT.OK)
  })
}

test('doctor: helm template output with many documents, unknown kinds and CRDs: skipped with a note, never a crash', async () => {
  const docs: string[] = ['# Source: chart/templates/crd.yaml\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n']
  for (let i = 0; i < 60; i++) {
    docs.push(manifest().replaceAll('name: orders', `name: orders-${i}`).replaceAll('app: orders', `app: orders-${i}`))
    docs.push(`# Source: chart/templates/widget-${i}.yaml\napiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w-${i}\nspec: { size: ${i} }\n`)
  }
  // Known kinds in shapes nobody writes on purpose.
  docs.push('apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: { name: odd }\nspec: { rules: "everything" }\n')
  docs.push('apiVersion: gateway.networking.k8s.io/v1\nkind: GRPCRoute\nmetadata: { name: odd2 }\nspec:\n  rules: [null, 3, { backendRefs: "x" }, { backendRefs: [null, { name: 7 }] }]\n')
  docs.push('apiVersion: gateway.envoyproxy.io/v1alpha1\nkind: EnvoyProxy\nmetadata: { name: odd }\nspec: { shutdown: 42 }\n')
  docs.push('apiVersion: gateway.envoyproxy.io/v1alpha1\nkind: EnvoyProxy\nmetadata: { name: odd3 }\nspec: { shutdown: { drainTimeout: "forever", minDrainDuration: [] } }\n')
  docs.push('apiVersion: gateway.envoyproxy.io/v1alpha1\nkind: BackendTrafficPolicy\nmetadata: { name: odd }\nspec: { targetRefs: "all", loadBalancer: { slowStart: { window: 9 } } }\n')
  docs.push('apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: { name: odd }\nspec: { minAvailable: "lots", selector: { matchLabels: [1, 2] } }\n')
  docs.push('apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: { name: odd }\nspec: { host: 5, trafficPolicy: null }\n')
  docs.push('apiVersion: v1\nkind: Service\nmetadata:\n  name: odd\n  annotations: { "service.beta.kubernetes.io/aws-load-balancer-target-group-attributes": "deregistration_delay.timeout_seconds=abc", cloud.google.com/backend-config: "{{" }\nspec: { selector: "app=odd" }\n')
  docs.push('apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: { name: hpa }\nspec: { scaleTargetRef: { name: orders-0 }, minReplicas: "two" }\n')
  docs.push('apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: bare }\nspec: { replicas: 2, template: { metadata: { labels: null }, spec: { containers: [{ name: app, command: "npm start", ports: [{ containerPort: 1 }] }] } } }\n')
  const run = await runCommand(doctor, ['-', '--json'], { stdin: stdin(docs.join('---\n')) })
  assert.ok(run.code === EXIT.OK || run.code === EXIT.FAILED, run.stderr)
  const result = JSON.parse(run.stdout) as DoctorResult
  assert.equal(result.objects.filter((o) => o.window !== undefined).length, 61)
  const notes = result.objects.filter((o) => o.note !== undefined)
  assert.equal(notes.filter((o) => o.object.startsWith('Widget/')).length, 60)
  assert.match(notes.find((o) => o.object === 'CustomResourceDefinition/widgets.example.com')!.note!, /skipped: a CustomResourceDefinition/)
  assert.match(notes.find((o) => o.object === 'Widget/w-0')!.note!, /skipped: Widget is not a kind the doctor reads \(example\.com\/v1\)/)
  // The 60 fine Deployments have no finding; the odd ones' findings still name a line.
  assert.deepEqual(result.findings.filter((f) => /^Deployment\/orders-\d+$/.test(f.object) && f.object !== 'Deployment/orders-0'), [])
  for (const f of result.findings) assert.ok(f.line >= 1 && f.message.length > 20, JSON.stringify(f))
  // The text report lists the skipped objects too.
  const text = await runCommand(doctor, ['-'], { stdin: stdin(docs.join('---\n')) })
  assert.match(text.stdout, /Widget\/w-59 \(line \d+\): skipped/)
})

test('doctor --json lists every check it ran, and only those', async () => {
  const { result } = await doctorJson(manifest())
  const codes: string[] = result.checks.map((c) => c.code)
  for (const code of ['prestop-missing', 'grace-too-short', 'readiness-missing', 'prestop-http-loopback', 'sigterm-not-forwarded', 'min-ready-short', 'readiness-topology', 'pdb-missing', 'pdb-too-tight', 'sidecar-stops-first']) assert.ok(codes.includes(code), code)
  for (const code of ['etp-local', 'nginx-pod-upstream', 'route-no-endpoint-lag', 'envoy-gateway-shutdown', 'ambient-sidecar']) assert.ok(!codes.includes(code), `${code} had nothing to check`)
  assert.ok(result.checks.every((c) => c.objects >= 1 && c.what.length > 10))
})

test('doctor: the Istio version from the manifest decides classic or native (proxyv2 tag, istio.io/rev 1-27, --istio-version)', async () => {
  const classic = manifest({ labels: '\n        sidecar.istio.io/inject: "true"', annotations: '\n        sidecar.istio.io/statsInclusionSuffixes: downstream_rq_active,downstream_rq_total', grace: 60 })
  const codes = async (yaml: string, ...flags: string[]): Promise<string[]> => (await doctorJson(yaml, ...flags)).result.findings.map((f) => f.code).sort()
  assert.deepEqual(await codes(classic), ['istio-hold-off', 'sidecar-stops-first'], 'version unknown: classic')
  assert.deepEqual(await codes(classic, '--istio-version', '1.26'), ['istio-hold-off', 'sidecar-stops-first'])
  assert.deepEqual(await codes(classic, '--istio-version', '1.27'), [])
  const byRev = classic.replace('sidecar.istio.io/inject: "true"', 'istio.io/rev: 1-28-0')
  assert.deepEqual(await codes(byRev), [])
  const byStatus = classic.replace('sidecar.istio.io/statsInclusionSuffixes', 'sidecar.istio.io/status: \'{"initContainers":["istio-init"],"containers":["istio-proxy"],"revision":"1-27-2"}\'\n        sidecar.istio.io/statsInclusionSuffixes')
  assert.deepEqual(await codes(byStatus), [])
  const oldRev = classic.replace('sidecar.istio.io/inject: "true"', 'istio.io/rev: 1-25')
  assert.deepEqual(await codes(oldRev), ['istio-hold-off', 'sidecar-stops-first'])
  // kubectl get of an injected pod: the proxyv2 tag says which Istio injected it.
  const injected = classic.replace('      containers:\n', '      initContainers:\n        - name: istio-proxy\n          image: docker.io/istio/proxyv2:1.27.3\n          restartPolicy: Always\n      containers:\n')
  const { result } = await doctorJson(injected)
  assert.deepEqual(result.findings, [])
  assert.deepEqual(result.objects[0]!.istio, { mode: 'native', why: 'istio-proxy is an init container with restartPolicy: Always' })
  // The pod's own annotation wins over the version.
  const pinned = classic.replace('sidecar.istio.io/statsInclusionSuffixes', 'sidecar.istio.io/nativeSidecar: "false"\n        sidecar.istio.io/statsInclusionSuffixes')
  assert.deepEqual(await codes(pinned, '--istio-version', '1.28'), ['istio-hold-off', 'sidecar-stops-first'])
  const run = await runCommand(doctor, ['-', '--istio-version', 'new'], { stdin: stdin(classic) }).catch((err: Error) => err)
  assert.match(String(run instanceof Error ? run.message : ''), /--istio-version must look like 1\.27/)
})

test('doctor: ambient on the Namespace: no sidecar budget, no sidecar findings', async () => {
  const ns = 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n  labels:\n    istio.io/dataplane-mode: ambient\n---\n'
  const { result } = await doctorJson(ns + manifest())
  assert.deepEqual(result.findings, [])
  const d = result.objects.find((o) => o.object === 'Deployment/orders')!
  assert.equal(d.budget!.sidecar, null)
  assert.deepEqual(d.istio, { mode: 'ambient', why: 'Namespace/shop label istio.io/dataplane-mode: ambient' })
  // The preStop stays required in ambient, and says why.
  const noHook = await doctorJson(ns + manifest({ hook: '              exec: { command: ["true"] }' }).replace(/ {10}lifecycle:\n {12}preStop:\n.*\n/, ''))
  assert.match(noHook.result.findings.find((f) => f.code === 'prestop-missing')!.message, /ztunnel learning of the deletion late/)
})

test('doctor: externalTrafficPolicy: Local against the readiness policy: \'serve\' keeps the terminating pod usable, \'fail\' drops requests', async () => {
  const local = SERVICE.replace('spec:\n', 'spec:\n  type: LoadBalancer\n  externalTrafficPolicy: Local\n')
  const codes = async (yaml: string): Promise<string[]> => (await doctorJson(yaml)).result.findings.map((f) => f.code)
  assert.deepEqual(await codes(manifest({ rest: local })), ['etp-local'])
  const failing = await doctorJson(manifest({ rest: local }))
  assert.match(failing.result.findings[0]!.fix, /readinessWhileDraining: "serve"/)
  assert.deepEqual(await codes(manifest({ rest: local, annotations: '\n        lameduck.dev/readiness-while-draining: serve' })), [])
  // Set through the app container's env instead of the annotation.
  const env = manifest({ rest: local, app: '\n          env: [{ name: LAMEDUCK_READINESS_WHILE_DRAINING, value: serve }]' })
  assert.deepEqual(await codes(env), [])
  // A value the engine would refuse is named, at its line.
  const bad = await doctorJson(manifest({ annotations: '\n        lameduck.dev/readiness-while-draining: always' }))
  assert.deepEqual(bad.result.findings.map((f) => [f.code, f.line]), [['bad-annotation', 16]])
  assert.match(bad.result.findings[0]!.message, /must be 'fail' or 'serve' \(got 'always'\)/)
})

test('doctor: hostile values in the new checks (a 500 KB sh -c script, a 100 KB httpGet path, runaway durations) stay short and fast', async () => {
  const script = 'node a; '.repeat(60_000) + '1'.repeat(20_000)
  const hostile = manifest({
    app: `\n          command: ["sh", "-c", ${JSON.stringify(script)}]`,
    hook: `              httpGet: { path: ${JSON.stringify('/offline' + '/'.repeat(100_000))}, port: 54199 }`,
    rest: `---\napiVersion: gateway.envoyproxy.io/v1alpha1\nkind: EnvoyProxy\nmetadata: { name: e }\nspec: { shutdown: { drainTimeout: "${'1'.repeat(300_000)}x", minDrainDuration: "${'1m'.repeat(100_000)}!" } }\n`
  })
  const { code, result } = await doctorJson(hostile)
  assert.equal(code, EXIT.FAILED)
  assert.deepEqual(result.findings.map((f) => f.code).sort(), ['envoy-gateway-shutdown', 'prestop-http-loopback', 'sigterm-not-forwarded'])
  for (const f of result.findings) assert.ok(f.message.length < 1_000, `${f.code}: ${f.message.length} characters`)
})

test('doctor\'s text report names each pod\'s Istio data plane and why', async () => {
  const run = await runCommand(doctor, [fileURLToPath(new URL('../../../examples/k8s/05-istio-native.yaml', import.meta.url))])
  assert.match(run.stdout, /Deployment\/orders \(line \d+\): window 15 s .*; Istio native \(annotation sidecar\.istio\.io\/nativeSidecar: "true"\)/)
  const ambient = await runCommand(doctor, [fileURLToPath(new URL('../../../examples/k8s/06-istio-ambient.yaml', import.meta.url))])
  assert.match(ambient.stdout, /; Istio ambient \(Namespace\/shop label istio\.io\/dataplane-mode: ambient\)/)
})
