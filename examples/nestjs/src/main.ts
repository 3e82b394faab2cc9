// A NestJS service (Express adapter) registered in Nacos, drained by @lameduck/node.
//   npm start -w @lameduck/example-nestjs             # builds with tsc, :3000, admin 127.0.0.1:54199
//   curl -s 'localhost:54199/offline?wait=true'       # what `lameduck prestop` does
// Env: PORT (3000), ADMIN_PORT (54199), HOST (127.0.0.1), NACOS_SERVER
// (127.0.0.1:8848), WINDOW_MS (the 'nacos' 11.5 s window when unset).
import 'reflect-metadata'
import { NestFactory } from '@nestjs/core'
import type { NestExpressApplication } from '@nestjs/platform-express'
import { attach } from '@lameduck/node'
import { nacosRegistry } from '@lameduck/nacos'
import { AppModule } from './app.module.ts'

const host = process.env.HOST || '127.0.0.1'
const windowMs = Number(process.env.WINDOW_MS || 0)

const app = await NestFactory.create<NestExpressApplication>(AppModule, { logger: ['warn', 'error'] })

// No app.enableShutdownHooks(): lameduck owns SIGTERM and closes the app once drained (closeApp).
const lameduck = await attach(app.getHttpServer(), {
  service: 'orders',
  host,
  registry: nacosRegistry({ serverList: process.env.NACOS_SERVER || '127.0.0.1:8848' }),
  readiness: [async () => true], // e.g. async () => db.ping(): nothing is registered before it passes
  // Nacos push delay + client poll (cacheMillis) + margin: 0.5 + 10 + 1 s; WINDOW_MS shortens it for a local run.
  windows: windowMs > 0 ? { clientFetchMs: windowMs } : 'nacos',
  maxRequestMs: 5_000,
  admin: { port: Number(process.env.ADMIN_PORT ?? 54199) },
  // Nest's onModuleDestroy / onApplicationShutdown hooks run after the drain, not at the signal.
  closeApp: () => app.close()
})

// lameduck's own log (stderr, readable; LAMEDUCK_LOG=json for JSON lines) says every transition: no need to print them here.
await app.listen(Number(process.env.PORT ?? 3000), host)
const { port } = app.getHttpServer().address() as { port: number }
console.log(`listening on http://${host}:${port}, admin ${lameduck.adminUrl}`)
