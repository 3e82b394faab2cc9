import { LEAVING } from './states.ts'

// The in-band protocol between providers and lameduck-aware consumers (HTTP/1.1
// has no standard "I am leaving" signal; Connection: close alone is ambiguous).

/** Sent by consumers: a stable id per consumer, so a provider knows whom it has told. */
export const CONSUMER_HEADER = 'x-lameduck-consumer'

/** Sent by providers on responses once they are leaving: the lifecycle state. */
export const STATE_HEADER = 'x-lameduck-state'

/**
 * States a provider announces in STATE_HEADER; consumers stop picking it on any
 * of them. The same set as `isLeaving()` (from STATE_CLASSES); typed as strings
 * because consumers test header values.
 */
export const LEAVING_STATES: ReadonlySet<string> = LEAVING
