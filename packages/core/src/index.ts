export {
  BodyTimeoutError,
  ClosingError,
  DeadlineError,
  FutureEventError,
  HandlerError,
  IncompleteBodyError,
  InternalError,
  MethodNotAllowedError,
  PayloadError,
  PayloadTooLargeError,
  RawBodyUnavailableError,
  SchemaError,
  type SchemaIssue,
  SignatureError,
  StaleEventError,
  StoreError,
  WebhookError,
  type WebhookErrorCode,
} from './errors.js'
export { type InProcessQueue, type InProcessQueueOptions, inProcessQueue } from './queue.js'
export {
  type BuiltInSchemas,
  baseEnvelopeSchema,
  type EventsOf,
  eventSchemas,
  knownEventTypes,
  type MerchantActivatedForPaymentTypeEvent,
  merchantActivatedForPaymentTypeSchema,
  type SaleCreatedFromBatchEvent,
  type SchemaMap,
  saleCreatedFromBatchSchema,
  type TransactionReturnedEvent,
  type TransactionSettledEvent,
  transactionReturnedSchema,
  transactionSettledSchema,
  type UnknownEvent,
} from './schemas.js'
export { isSignatureShaped, type RawBody, SIGNATURE_HEADER, sign, verify } from './signature.js'
export {
  type ClaimResult,
  DEFAULT_RETENTION_MS,
  type MemoryStore,
  type MemoryStoreOptions,
  memoryStore,
  type WebhookStore,
} from './store.js'
export type {
  AnyEvent,
  CloseOptions,
  DispatchOutcome,
  EventFor,
  EventMap,
  HeaderLookup,
  QueuedEvent,
  RawDelivery,
  SecretOption,
  WebhookQueue,
  WebhookResult,
  Webhooks,
  WebhooksOptions,
} from './types.js'
export { isQueuedEvent } from './verify-and-parse.js'
export {
  decodedTextBody,
  readBody,
  receiveWebRequest,
  toResponse,
  type WebReceiver,
  type WebRequestOptions,
} from './web.js'
export { createWebhooks } from './webhooks.js'
