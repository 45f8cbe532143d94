// Every error the receiver raises: one WebhookError subclass per reason, grouped by where it arises.

export {
  EventConflictError,
  FutureEventError,
  SchemaError,
  type SchemaIssue,
  StaleEventError,
} from './errors/event.js'
export {
  BusyError,
  ClosingError,
  DeadlineError,
  HandlerError,
  HandlerTimeoutError,
  InternalError,
  KeyHeldError,
  StoreError,
} from './errors/processing.js'
export {
  BodyTimeoutError,
  IncompleteBodyError,
  MethodNotAllowedError,
  PayloadError,
  PayloadTooLargeError,
  RawBodyUnavailableError,
  SignatureError,
} from './errors/request.js'
export { WebhookError, type WebhookErrorCode } from './errors/webhook-error.js'
