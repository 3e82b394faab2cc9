// import-heap.ts's child, plain JavaScript (a .ts file loads Node's type stripper, megabytes of heap)
// that imports nothing but what it measures (an ESM import of a built-in loads more).
if (process.argv[2] === 'engine') await import('@lameduck/node')
await new Promise((resolve) => setTimeout(resolve, 100))
globalThis.gc()
globalThis.gc()
process.stdout.write(String(process.memoryUsage().heapUsed))
