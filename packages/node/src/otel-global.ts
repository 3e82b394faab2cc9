import type { MeterProvider, TracerProvider } from '@opentelemetry/api'

/**
 * Where every copy of `@opentelemetry/api` 1.x keeps what the app registered
 * (`trace.setGlobalTracerProvider()`, `metrics.setGlobalMeterProvider()`, which an
 * SDK's start() calls): one object on globalThis under this symbol, `{ version,
 * trace, metrics, ... }`, shared so that two copies of the API in one process see
 * the same SDK. lameduck reads the providers there instead of importing the API: an
 * ESM import of it loads 52 modules, about 500 KB that stay on the heap of every
 * process without an SDK (most of them) and that every full GC marks.
 */
const API_GLOBAL = Symbol.for('opentelemetry.js.api.1')

interface ApiGlobal { trace?: Partial<TracerProvider>, metrics?: Partial<MeterProvider> }

function registered (): ApiGlobal | undefined {
  const g = (globalThis as Record<symbol, unknown>)[API_GLOBAL]
  return typeof g === 'object' && g !== null ? g : undefined
}

/** The tracer provider the app registered, or undefined (none yet: no spans). */
export function registeredTracerProvider (): TracerProvider | undefined {
  const p = registered()?.trace
  return typeof p?.getTracer === 'function' ? p as TracerProvider : undefined
}

/** The meter provider the app registered, or undefined (none yet: no metrics). */
export function registeredMeterProvider (): MeterProvider | undefined {
  const p = registered()?.metrics
  return typeof p?.getMeter === 'function' ? p as MeterProvider : undefined
}
