import { HandlerError } from '../errors/index.js'
import type { VerifiedEvent } from '../types.js'
import { type OrderingTable, positionOf } from './position.js'
import type { OrderingPosition } from './types.js'

/**
 * The event's ordering position for its claim, or a {@link HandlerError} (500, retried; parked on the last tries)
 * when its rule cannot place it: an event that cannot be fenced is not handled unfenced.
 */
export function claimPosition(
  table: OrderingTable | undefined,
  event: VerifiedEvent,
  answered: boolean,
): OrderingPosition | undefined {
  if (table === undefined) return undefined
  try {
    return positionOf(table, event)
  } catch (error) {
    throw new HandlerError(event.event_id, event.event_type, [error], answered)
  }
}
