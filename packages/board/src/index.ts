export { createBoard } from './board.js'
export {
  type Board,
  type BoardAuditEntry,
  type BoardLogger,
  type BoardOptions,
  type BoardRequest,
  type BoardResponse,
  type BoardWebhooks,
  BodyTooLargeError,
  type LetterSummary,
  MAX_BODY_BYTES,
} from './types.js'
