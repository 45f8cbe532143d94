import * as v from 'valibot'
import {
  FutureEventError,
  MethodNotAllowedError,
  PayloadError,
  PayloadTooLargeError,
  SchemaError,
  type SchemaIssue,
  SignatureError,
  StaleEventError,
} from '../errors/index.js'
import { escapeText, isSafeText } from '../logging/log.js'
import { missingSignature } from '../refusals/unsigned.js'
import { compileCheck } from '../schemas/check.js'
import type { SchemaMap } from '../schemas/events.js'
import { bareDigest, type DoctorBudgets, diagnoseSignature, HINTS } from '../signature-doctor/index.js'
import { parseCreatedAt, signedEventTime } from '../time/parse.js'
import type { RawDelivery, SecretOption, VerifiedEvent } from '../types.js'
import { isThenable } from '../util/thenable.js'
import { checkSecrets, type SecretEntry, type SecretList, type VerifiedSecret, verifiedSecret } from './secrets.js'
import { cryptoProvider, isSignatureShaped, type RawBody, SIGNATURE_HEADER } from './signature.js'

/** What verify-and-parse needs from the receiver. */
export interface VerifyState {
  readonly maxBodyBytes: number
  /** The secrets, when they do not depend on the request. */
  readonly secrets: SecretList | undefined
  readonly secretOption: SecretOption
  readonly schemas: SchemaMap
  /** Oldest `created_at` accepted, as an age; `Infinity` when not checked. */
  readonly maxEventAgeMs: number
  /** Furthest `created_at` accepted ahead of the clock; `Infinity` when not checked. */
  readonly maxClockSkewMs: number
  /** Sees each secret resolver's answer (the receiver warns once about a secret with whitespace around it). */
  readonly onResolvedSecrets?: (secrets: readonly string[]) => void
  /** The signature doctor's time left, in all and per source. */
  readonly doctor: DoctorBudgets
}

/**
 * `state`'s verification without the age checks, for a replay: a letter is old by nature (parked on the service's
 * last tries, replayed days later); the signature still proves it is the service's, and the store's claim still
 * runs it at most once. Only verification's own fields are taken, none of the receiver's mutable state.
 */
export function withoutAgeChecks(state: VerifyState): VerifyState {
  const { maxBodyBytes, secrets, secretOption, schemas, onResolvedSecrets, doctor } = state
  const unbounded = Number.POSITIVE_INFINITY
  return {
    maxBodyBytes,
    secrets,
    secretOption,
    schemas,
    onResolvedSecrets,
    doctor,
    maxEventAgeMs: unbounded,
    maxClockSkewMs: unbounded,
  }
}

/** Where {@link verifyAndParse} says which secret verified the body. */
export interface VerifiedWithSink {
  verifiedWith: VerifiedSecret | undefined
}

type SecretResolver = Exclude<SecretOption, string | readonly SecretEntry[]>

const decoder = new TextDecoder()
const strictDecoder = new TextDecoder('utf-8', { fatal: true })

/**
 * The text of `bytes`, or `undefined` when they are not UTF-8: two bodies differing only in a byte that is not
 * text would otherwise decode to one event_id. The strict decoder runs only when the text holds U+FFFD, which the
 * lenient one writes for each such byte (a U+FFFD sent as valid UTF-8 passes).
 */
function decodeUtf8(bytes: Exclude<RawBody, string>): string | undefined {
  const text = decoder.decode(bytes)
  if (!text.includes('\uFFFD')) return text
  try {
    strictDecoder.decode(bytes)
    return text
  } catch {
    return undefined
  }
}

/** Longest id or type quoted in an `invalid_id` error. */
const QUOTED_ID_LENGTH = 200
const quoted = (text: string) =>
  escapeText(text.length > QUOTED_ID_LENGTH ? `${text.slice(0, QUOTED_ID_LENGTH)}…` : text)

/**
 * Whether `value` is a message with a non-empty string `event_id` and `event_type`: the same check as
 * `baseEnvelopeSchema`, without building a copy (it runs on every delivery). Queue workers use it on job data.
 */
export function isQueuedEvent(value: unknown): value is VerifiedEvent {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const { event_id, event_type } = value as Record<string, unknown>
  return typeof event_id === 'string' && event_id !== '' && typeof event_type === 'string' && event_type !== ''
}

/**
 * What a valibot issue says without the value refused: valibot's own messages quote it (`but received "…"`) and a
 * schema's custom message may be a function of it, so neither is kept. A schema issue names the type expected
 * (`missing` for an absent key, `failed custom` for `v.custom`); a validation names the action and, when it has
 * one, its requirement (a length, a pattern: the schema's, not the body's).
 */
function issueMessage(issue: v.BaseIssue<unknown>): string {
  if (issue.kind === 'schema') {
    if (issue.received === 'undefined') return 'missing'
    // A `custom` schema expects `unknown`: its test is a function, named by nothing.
    return issue.type === 'custom' ? 'failed custom' : `expected ${issue.expected}`
  }
  return issue.expected === null ? `failed ${issue.type}` : `failed ${issue.type}, expected ${issue.expected}`
}

function flattenIssues(issues: readonly v.BaseIssue<unknown>[]): SchemaIssue[] {
  return issues.map((issue) => ({
    path: issue.path?.map((item) => String(item.key)).join('.') ?? '',
    message: issueMessage(issue),
  }))
}

/**
 * `event` itself; throws why its signed time is refused: older than `maxEventAgeMs`, or (`created_at` only) too far
 * in the future. A `transaction_returned` has no `created_at`: its `settlement_date` (the time of return) gives its
 * age, so a captured copy replayed after the store's retention is not run again; a return dated ahead of the
 * clock is not refused (that date is the processor's, not the sender's clock).
 */
function checkAge(state: VerifyState, event: VerifiedEvent): VerifiedEvent {
  const createdAt = event.created_at
  // Nearly every delivery has a created_at: read it without building the pair signedEventTime returns.
  const signed = typeof createdAt === 'string' ? undefined : signedEventTime(event)
  const text = typeof createdAt === 'string' ? createdAt : signed?.text
  if (text === undefined) return event
  const time = parseCreatedAt(text)
  if (Number.isNaN(time)) return event
  const ageMs = Date.now() - time
  if (ageMs > state.maxEventAgeMs) {
    throw new StaleEventError(event.event_id, event.event_type, text, ageMs, event, signed?.field ?? 'created_at')
  }
  if (signed === undefined && -ageMs > state.maxClockSkewMs) {
    throw new FutureEventError(event.event_id, event.event_type, text, -ageMs)
  }
  return event
}

/**
 * Rejects with the 401 of a body no secret verifies, with the signature doctor's hint (within the budget of the
 * receiver and of `source`, the client's address).
 */
async function refused(
  state: VerifyState,
  body: RawBody,
  header: string,
  secrets: readonly string[] | undefined,
  message: string,
  source: string | undefined,
): Promise<never> {
  let hint = HINTS.not_diagnosed
  if (secrets) {
    try {
      const diagnose = () => diagnoseSignature({ secrets, body, signature: header })
      hint = (await state.doctor.within(source, diagnose)) ?? hint
    } catch {
      // The doctor only ever adds a hint: whatever it throws, the answer stays the 401.
    }
  }
  throw new SignatureError('invalid_signature', message, hint)
}

function parse(
  state: VerifyState,
  delivery: RawDelivery,
  body: RawBody,
  signature: string,
  list: SecretList,
  matched: number,
  sink: VerifiedWithSink | undefined,
): VerifiedEvent | Promise<never> {
  if (matched < 0) {
    const message = 'signature does not match the body'
    return refused(state, body, signature, list.secrets, message, delivery.remoteAddress)
  }
  if (sink) sink.verifiedWith = verifiedSecret(list, matched)
  // A string body is text already decoded: drop a leading BOM as TextDecoder does for bytes.
  const text = typeof body !== 'string' ? decodeUtf8(body) : body.charCodeAt(0) === 0xfeff ? body.slice(1) : body
  if (text === undefined) throw new PayloadError('invalid_encoding', 'body is not valid UTF-8')
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    throw new PayloadError('invalid_json', 'body is not valid JSON')
  }
  if (!isQueuedEvent(parsed)) {
    throw new PayloadError('invalid_envelope', 'body needs a non-empty string event_id and event_type')
  }
  if (!isSafeText(parsed.event_id) || !isSafeText(parsed.event_type)) {
    const [id, type] = [quoted(parsed.event_id), quoted(parsed.event_type)]
    const message = `event_id "${id}" or event_type "${type}" holds a control character or a lone surrogate`
    throw new PayloadError('invalid_id', message, id, type)
  }
  const schema = state.schemas[parsed.event_type]
  if (!schema) return checkAge(state, parsed)
  if (compileCheck(schema)?.(parsed)) return checkAge(state, parsed)
  const result = v.safeParse(schema, parsed)
  if (!result.success) throw new SchemaError(parsed.event_id, parsed.event_type, flattenIssues(result.issues), parsed)
  return checkAge(state, result.output)
}

function match(
  state: VerifyState,
  delivery: RawDelivery,
  body: RawBody,
  signature: string,
  list: SecretList,
  sink: VerifiedWithSink | undefined,
): VerifiedEvent | Promise<VerifiedEvent> {
  const matched = cryptoProvider.match(list.secrets, body, signature)
  return typeof matched === 'number'
    ? parse(state, delivery, body, signature, list, matched, sink)
    : matched.then((i) => parse(state, delivery, body, signature, list, i, sink))
}

/** A resolver's answer, checked and shown to `onResolvedSecrets`. */
function resolvedList(state: VerifyState, secrets: string | readonly SecretEntry[]): SecretList {
  const list = checkSecrets(secrets)
  state.onResolvedSecrets?.(list.secrets)
  return list
}

/** The secrets for diagnosing a malformed header: a resolver that fails then only costs the hint. */
async function secretsToDiagnose(state: VerifyState, delivery: RawDelivery): Promise<readonly string[] | undefined> {
  if (state.secrets) return state.secrets.secrets
  try {
    return checkSecrets(await (state.secretOption as SecretResolver)(delivery)).secrets
  } catch {
    return undefined
  }
}

/**
 * Checks the method, the size and the signature of the exact bytes received (`body`, once `delivery`'s body
 * arrived), then parses them, validates the event against its schema and checks its age; `sink.verifiedWith` is
 * set to the secret that verified. Synchronous with `node:crypto` and static secrets (no promise per delivery); a
 * secret resolver, Web Crypto, or a failed check (the signature doctor then runs) make it asynchronous. Why the
 * delivery is refused is thrown (or rejected with) as a `WebhookError`, as every stage of the receiver does;
 * anything else thrown is a secret resolver's own failure.
 */
export function verifyAndParse(
  state: VerifyState,
  delivery: RawDelivery,
  body: RawBody,
  sink?: VerifiedWithSink,
): VerifiedEvent | Promise<VerifiedEvent> {
  if (delivery.method !== undefined && delivery.method !== 'POST') throw new MethodNotAllowedError(delivery.method)
  if ((typeof body === 'string' ? body.length : body.byteLength) > state.maxBodyBytes) {
    throw new PayloadTooLargeError(state.maxBodyBytes)
  }
  const signature = delivery.getHeader(SIGNATURE_HEADER)
  if (!signature) throw missingSignature()
  if (!isSignatureShaped(signature)) {
    const message = `${SIGNATURE_HEADER} must be 64 hex characters`
    // Nothing to try without a digest inside: no HMAC, and no call to a secret resolver.
    if (bareDigest(signature) === undefined)
      throw new SignatureError('invalid_signature', message, HINTS.malformed_header)
    return secretsToDiagnose(state, delivery).then((secrets) =>
      refused(state, body, signature, secrets, message, delivery.remoteAddress),
    )
  }
  if (state.secrets) return match(state, delivery, body, signature, state.secrets, sink)
  const resolved = (state.secretOption as SecretResolver)(delivery)
  if (!isThenable(resolved)) return match(state, delivery, body, signature, resolvedList(state, resolved), sink)
  return Promise.resolve(resolved).then((secrets) =>
    match(state, delivery, body, signature, resolvedList(state, secrets), sink),
  )
}
