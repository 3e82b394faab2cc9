/**
 * Node's built-in modules, taken when first used instead of imported. An ESM
 * `import` of a built-in builds its whole namespace, and that reads every lazy
 * export: `node:http` loads Node's bundled undici (for `http.WebSocket`),
 * worker_threads and perf_hooks; `node:crypto` loads WebCrypto; `node:fs` its
 * streams; `node:net` its BlockList. The engine needs none of that to serve, and
 * what a module loads stays on the app's heap for good (about 2 MB in a grpc-js
 * server, which every full GC marks). `process.getBuiltinModule` (Node >= 22.3)
 * returns the module itself, without a namespace.
 */
export const http = (): typeof import('node:http') => process.getBuiltinModule('node:http')
export const net = (): typeof import('node:net') => process.getBuiltinModule('node:net')
export const http2 = (): typeof import('node:http2') => process.getBuiltinModule('node:http2')
export const crypto = (): typeof import('node:crypto') => process.getBuiltinModule('node:crypto')
export const fs = (): typeof import('node:fs') => process.getBuiltinModule('node:fs')
export const cluster = (): typeof import('node:cluster').default => process.getBuiltinModule('node:cluster') as unknown as typeof import('node:cluster').default
