// A window that ends when the test says so: window evidence (core's WindowEvidence, typed
// here structurally so test-utils depends on nothing) that stays pending until release().
// A test whose premise is "this happens during the window" then holds on a loaded machine
// too, where any fixed window may end before a slow client has done its part.

export interface HeldWindow {
  /** Pass as the engine's `windowEvidence`, with `windows: { endpointLagMs: <any> }`: the drain's window waits for release(). */
  evidence: {
    name: string
    part: 'endpointLagMs'
    restMs: number
    begin(now: number): void
    read(now: number): { state: 'pending', detail: string } | { state: 'over', at: number, detail: string }
    onChange(fn: () => void): () => void
  }
  /** The term is over now: the window ends (once the registry's term is over too). */
  release(): void
}

export function heldWindow (): HeldWindow {
  let releasedAt: number | null = null
  const listeners = new Set<() => void>()
  return {
    evidence: {
      name: 'held by the test',
      part: 'endpointLagMs',
      restMs: 0,
      begin () { releasedAt = null },
      read: () => releasedAt === null ? { state: 'pending', detail: 'held' } : { state: 'over', at: releasedAt, detail: 'released' },
      onChange: (fn) => { listeners.add(fn); return () => { listeners.delete(fn) } }
    },
    release () {
      releasedAt = Date.now()
      for (const fn of listeners) fn()
    }
  }
}
