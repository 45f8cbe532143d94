import type { OrderingMark, OrderingPosition } from './types.js'

/** Negative when `a` comes before `b`: by time, then event type, then event id (so every order is total). */
export function compareMarks(a: OrderingMark, b: OrderingMark): number {
  if (a.at !== b.at) return a.at < b.at ? -1 : 1
  if (a.eventType !== b.eventType) return a.eventType < b.eventType ? -1 : 1
  if (a.eventId !== b.eventId) return a.eventId < b.eventId ? -1 : 1
  return 0
}

/** The mark an event leaves once handled. */
export function markOf(position: OrderingPosition, eventId: string): OrderingMark {
  return { at: position.at, eventType: position.eventType, eventId }
}
