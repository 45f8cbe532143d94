export {
  compareDeadLetters,
  type DeadLetter,
  type DeadLetterCode,
  type DeadLetterCountQuery,
  type DeadLetterFilter,
  type DeadLetterPosition,
  type DeadLetterQuery,
  type DeadLetterStore,
  type DeadLetters,
  deadLetterCountQuery,
  deadLetterCursor,
  deadLetterMatches,
  deadLetterPage,
  deadLetterPosition,
  deadLetterQuery,
  LAST_TRIES_AFTER_MS,
  type MemoryDeadLetterStore,
  type MemoryDeadLetterStoreOptions,
  memoryDeadLetterStore,
  type NormalizedDeadLetterQuery,
  type ParkedEvent,
  type ReplayOutcome,
} from './dead-letters/index.js'
export {
  BodyTimeoutError,
  BusyError,
  ClosingError,
  DeadlineError,
  EventConflictError,
  FutureEventError,
  HandlerError,
  HandlerTimeoutError,
  IncompleteBodyError,
  InternalError,
  KeyHeldError,
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
export {
  type HealthAnswer,
  type HealthCheck,
  type HealthOptions,
  type HealthReceiver,
  type HealthReport,
  healthAnswer,
  webHealth,
} from './health/index.js'
export {
  cursorOf,
  DEFAULT_JOURNAL_RETENTION_MS,
  type EventListPage,
  type EventListQuery,
  type Events,
  type EventTimeline,
  type FleetCounts,
  type Journal,
  type JournalAnswer,
  type JournalListedAnswer,
  type JournalListQuery,
  type JournalMinute,
  type JournalRecord,
  type JournalSecret,
  journalListQuery,
  journalMatches,
  journalRetention,
  type MemoryJournalOptions,
  memoryJournal,
  newerFirst,
} from './journal/index.js'
export type { LogFields, Logger } from './log.js'
export {
  DEFAULT_RETENTION_MS,
  type MemoryStore,
  type MemoryStoreOptions,
  memoryStore,
} from './memory-store.js'
export type {
  HeldKeysOptions,
  HeldOrderingKey,
  OnOptions,
  Ordering,
  OrderingMark,
  OrderingPosition,
  OrderingRule,
  OrderingRules,
} from './ordering/index.js'
export { type ProxyArrivalOptions, parseRequestStart } from './proxy-arrival.js'
export { type InProcessQueue, type InProcessQueueOptions, inProcessQueue } from './queue.js'
export { createWebhooks } from './receiver/create.js'
export {
  type BuiltInSchemas,
  baseEnvelopeSchema,
  closestEventType,
  type EventsOf,
  eventSchemas,
  knownEventTypes,
  type MerchantActivatedForPaymentTypeEvent,
  merchantActivatedForPaymentTypeSchema,
  type SaleCreatedFromBatchEvent,
  type SchemaMap,
  type SchemaMapOption,
  saleCreatedFromBatchSchema,
  type TransactionReturnedEvent,
  type TransactionSettledEvent,
  transactionReturnedSchema,
  transactionSettledSchema,
  type UnknownEvent,
} from './schemas.js'
export type { LabeledSecret, SecretEntry, VerifiedSecret } from './secrets.js'
export {
  ANSWER_LIMIT_MS,
  EVENT_TYPES,
  RESELLER_SCOPED_EVENT_TYPES,
  RETRY_HOURS,
  RETRY_INTERVAL_MS,
  RETRY_WINDOW_MS,
} from './service-contract.js'
export { isSignatureShaped, type RawBody, SIGNATURE_HEADER, sign, verify } from './signature.js'
export {
  DOCTOR_MAX_BODY_BYTES,
  diagnoseSignature,
  SANDBOX_TEST_SECRET,
  type SignatureDiagnosisInput,
  type SignatureHint,
  type SignatureHintCode,
} from './signature-doctor/index.js'
export type {
  AnswerLatency,
  DeliveryCounts,
  HungRun,
  HungRuns,
  ReceiverStats,
  RefusedRequests,
  RetryingEvent,
  RetryingEvents,
  SecretStats,
  SecretUsage,
} from './stats/index.js'
export type { ClaimResult, TransactionOutcome, WebhookStore } from './store.js'
export type { DeadLetterOperation, StoreErrorOperation } from './store-operations.js'
export type {
  HandlerRun,
  StoreOperation,
  Telemetry,
  TelemetryEvent,
  TelemetryGauges,
  TelemetryOutcome,
  TelemetryScope,
  TraceCarrier,
} from './telemetry.js'
export { parseCreatedAt } from './time.js'
export { TransactionAbortedError } from './transaction-aborted.js'
export type {
  AnyEvent,
  CloseOptions,
  DispatchOptions,
  DispatchOutcome,
  EnqueueOptions,
  EventFor,
  EventMap,
  Handler,
  HandlerContext,
  HeaderLookup,
  QueuedEvent,
  RawDelivery,
  SecretOption,
  VerifiedEvent,
  WebhookQueue,
  WebhookResult,
  Webhooks,
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
export type { WebhooksOptions } from './webhooks-options.js'
