export { claimPosition } from './event-position.js'
export { listHeldKeys, MAX_HELD_KEYS } from './held.js'
export { compareMarks, markOf } from './marks.js'
export { type FenceEntry, MemoryFences } from './memory-fences.js'
export { type OrderingTable, orderingOf, orderingTable, positionOf } from './position.js'
export { withOnOptions } from './skip.js'
export type {
  HeldKeysOptions,
  HeldOrderingKey,
  OnOptions,
  Ordering,
  OrderingMark,
  OrderingPosition,
  OrderingRule,
  OrderingRules,
} from './types.js'
