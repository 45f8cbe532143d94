// Every error the receiver raises: one WebhookError subclass per reason, grouped by where it arises.

export {
  EventConflictError,
  FutureEventError,
  SchemaError,
  type SchemaIssue,
  StaleEventError,
} from './event.js'
export {
  BusyError,
  ClosingError,
  DeadlineError,
  EventHeldError,
  HandlerError,
  HandlerTimeoutError,
  InternalError,
  KeyHeldError,
  PausedError,
  QuarantinedError,
  StoreError,
} from './processing.js'
export {
  BodyTimeoutError,
  IncompleteBodyError,
  MethodNotAllowedError,
  PayloadError,
  PayloadTooLargeError,
  RawBodyUnavailableError,
  SignatureError,
} from './request.js'
export { WebhookError, type WebhookErrorCode } from './webhook-error.js'
