// For footprint fixtures: which packages a process loads from now on. Its own entry point
// (`@lameduck/test-utils/packages-loaded`), importing nothing but node:module, so that
// taking it loads none of what a fixture measures.
import { registerHooks } from 'node:module'

/** The package a module URL belongs to: `@scope/name` or `name` under node_modules, `@lameduck/<dir>` for this repo's packages/<dir>. */
export function packageOf (url: string): string | null {
  const nm = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)
  if (nm !== null) return nm[1]!
  const own = ownModuleOf(url)
  return own === null ? null : `@lameduck/${own.slice(0, own.indexOf('/'))}`
}

/** This repo's module at `url` as `<package dir>/<path under src or dist>` (e.g. `node/cluster.ts`), or null. */
function ownModuleOf (url: string): string | null {
  const own = /\/packages\/([^/]+)\/(?:src|dist)\/(.+)$/.exec(url)
  return own === null ? null : `${own[1]!}/${own[2]!}`
}

/**
 * Starts recording the packages whose modules load (ESM imports and CommonJS requires, through
 * module.registerHooks); returns what was recorded so far, sorted.
 */
export function recordPackages (): () => string[] {
  const seen = new Set<string>()
  registerHooks({
    load (url, context, next) {
      const name = packageOf(url)
      if (name !== null) seen.add(name)
      return next(url, context)
    }
  })
  return () => [...seen].sort()
}

/** Starts recording which of this repo's modules load (as ownModuleOf names them); returns them so far, sorted. */
export function recordModules (): () => string[] {
  const seen = new Set<string>()
  registerHooks({
    load (url, context, next) {
      const own = ownModuleOf(url)
      if (own !== null) seen.add(own)
      return next(url, context)
    }
  })
  return () => [...seen].sort()
}
