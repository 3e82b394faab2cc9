// One pod in one command: its Envoy sidecar, then its app. On Ctrl-C (SIGINT)
// or SIGTERM the app runs its offline sequence (window, Envoy drain, in-flight)
// and closes; the sidecar stops only after that, as a native sidecar does.
//   npm run pod -w @lameduck/example-envoy-sidecar             # pod a
//   POD=b npm run pod -w @lameduck/example-envoy-sidecar       # pod b, every port + 100
import { startApp } from './app.ts'
import { clock, podPorts, readSettings } from './settings.ts'
import { startSidecar } from './sidecar.ts'

const s = readSettings()
const pod = process.env.POD || 'a'
const ports = podPorts(pod)
const envoy = await startSidecar({ pod, upstream: `http://127.0.0.1:${ports.app}`, listen: ports.listen, admin: ports.envoyAdmin, settings: s })
console.log(`${clock()}  envoy-${pod} proxies ${envoy.url} → 127.0.0.1:${ports.app}, admin ${envoy.adminUrl}; drain time ${s.envoyDrainTimeMs} ms`)
const app = await startApp({ pod, port: ports.app, adminPort: ports.admin, envoyAdmin: envoy.adminUrl, advertisePort: envoy.port, settings: s })
app.lameduck.on('state', (c) => {
  if (c.to === 'stopped') envoy.close().then(() => console.log(`${clock()}  envoy-${pod} stopped (after the app)`), console.error)
})
