// The example as `npm start` runs it, against the local Eureka server: it
// registers, `lameduck prestop` takes it offline under keep-alive traffic with
// a 300 ms window, and SIGTERM then ends it (examples/shared/src/eureka-smoke.ts).
import { fileURLToPath } from 'node:url'
import { describeEurekaExample } from '@lameduck/example-shared/eureka-smoke'

describeEurekaExample('examples/express', fileURLToPath(new URL('../src/server.ts', import.meta.url)))
