// Earliest-deadline-first weighted scheduling, the scheme Envoy's round robin
// uses once weights differ. Each member has a deadline; a pick takes the earliest
// and moves it 1/weight later. Over any window every member's share is its weight
// share, picks interleave smoothly, and a pick costs O(log n) with no allocation:
// the heap lives in typed arrays that only grow when membership grows.

/**
 * Every weight the scheduler is given is first bounded to this range (NaN counts as
 * the minimum): 1/weight and the deadlines then stay finite whatever it is given. A
 * denormal weight (1e-319) once made a step of Infinity, and the rescale in reset()
 * turned it into a NaN deadline that broke the heap order for good (picks split evenly
 * whatever the weights). The range is wider than any configured weight times a
 * warmup factor, so it never changes a share the balancer means.
 */
export const PICK_WEIGHT_RANGE = { min: 1e-6, max: 1e6 } as const

/** `weight` bounded to PICK_WEIGHT_RANGE. */
function pickWeight (weight: number): number {
  return weight >= PICK_WEIGHT_RANGE.min ? Math.min(weight, PICK_WEIGHT_RANGE.max) : PICK_WEIGHT_RANGE.min
}

export class EdfScheduler<T> {
  /** Members by slot. */
  #members: T[] = []
  /** 1 / weight by slot. */
  #step = new Float64Array(8)
  /** Slots in heap order, and their deadlines alongside (kept together for locality). */
  #heap = new Int32Array(8)
  #deadline = new Float64Array(8)
  #size = 0
  /** Deadline of the last pick: the scheduler's virtual time. */
  #now = 0

  get size (): number { return this.#size }

  /**
   * Replaces members and weights (all > 0; bounded to PICK_WEIGHT_RANGE). A member
   * that stays keeps its place in the rotation: the distance to its deadline is
   * rescaled to its new weight, so a warming instance whose weight grows is picked
   * sooner at once, not after the long gap its old weight had earned. New members
   * start one step from now.
   */
  reset (members: readonly T[], weights: ArrayLike<number>): void {
    const previous = new Map<T, { deadline: number, step: number }>()
    for (let p = 0; p < this.#size; p++) {
      const slot = this.#heap[p]!
      previous.set(this.#members[slot]!, { deadline: this.#deadline[p]!, step: this.#step[slot]! })
    }
    const n = members.length
    if (this.#step.length < n) {
      const cap = Math.max(n, this.#step.length * 2)
      this.#step = new Float64Array(cap)
      this.#heap = new Int32Array(cap)
      this.#deadline = new Float64Array(cap)
    }
    // Keep deadlines small so float precision never erodes the shares.
    const base = this.#now
    this.#now = 0
    const order: number[] = []
    this.#members = members.slice()
    for (let slot = 0; slot < n; slot++) {
      const step = 1 / pickWeight(weights[slot]!)
      this.#step[slot] = step
      const prev = previous.get(members[slot]!)
      // The part of its step the member still had to wait, carried over to the new step. It is
      // within 0..1 (a deadline is never more than one step past the virtual time, and one that
      // a retry skipped may lie behind it); bounded all the same, so no deadline is ever non-finite.
      const left = prev === undefined ? 1 : (prev.deadline - base) / prev.step
      this.#deadline[slot] = step * (left > 0 ? Math.min(left, 1) : left <= 0 ? 0 : 1)
      order.push(slot)
    }
    // A sorted array is a valid heap; sort by deadline, ties by slot (deterministic).
    const byDeadline = this.#deadline.slice(0, n)
    order.sort((a, b) => byDeadline[a]! - byDeadline[b]! || a - b)
    for (let p = 0; p < n; p++) {
      this.#heap[p] = order[p]!
      this.#deadline[p] = byDeadline[order[p]!]!
    }
    this.#size = n
  }

  /** The next member, or undefined when empty. */
  pick (): T | undefined {
    if (this.#size === 0) return undefined
    const slot = this.#heap[0]!
    this.#now = this.#deadline[0]!
    this.#advance(0, slot)
    return this.#members[slot]
  }

  /** Like pick(), but skips members for which `skip` is true (the slow path of a retry). */
  pickExcept (skip: (member: T) => boolean): T | undefined {
    let best = -1
    for (let p = 0; p < this.#size; p++) {
      if (skip(this.#members[this.#heap[p]!]!)) continue
      if (best === -1 || this.#deadline[p]! < this.#deadline[best]!) best = p
    }
    if (best === -1) return undefined
    const slot = this.#heap[best]!
    this.#now = Math.max(this.#now, this.#deadline[best]!)
    this.#advance(best, slot)
    return this.#members[slot]
  }

  /** Moves the member at heap position `pos` one step later and restores the heap below it. */
  #advance (pos: number, slot: number): void {
    const heap = this.#heap
    const deadlines = this.#deadline
    const n = this.#size
    const d = deadlines[pos]! + this.#step[slot]!
    for (;;) {
      let child = 2 * pos + 1
      if (child >= n) break
      let cd = deadlines[child]!
      const right = child + 1
      if (right < n) {
        const rd = deadlines[right]!
        if (rd < cd) { child = right; cd = rd }
      }
      // Sink past equal deadlines too: members that tie take turns.
      if (cd > d) break
      heap[pos] = heap[child]!
      deadlines[pos] = cd
      pos = child
    }
    heap[pos] = slot
    deadlines[pos] = d
  }
}
