import { Buffer } from 'node:buffer'
import type { TraceCarrier, VerifiedEvent } from '@payhooks/core'

/** Default BullMQ queue name of {@link bullmqQueue} and {@link startWorker}. */
export const DEFAULT_QUEUE_NAME = 'payhooks'
/** BullMQ's own default key prefix. Not 'payhooks': that is the dedupe store's default key prefix. */
export const DEFAULT_QUEUE_PREFIX = 'bull'

const JOB_ID_PREFIX = 'evt-'

/**
 * Field of a job's data holding the trace context of the delivery that queued it (with `telemetry` on the
 * receiver), beside the event's own fields; the worker takes it out before the handlers see the event.
 */
export const TRACE_FIELD = '_payhooks_trace'

/** A job's data split into the event and the trace context queued with it, if any (a non-object is ignored). */
export function splitJobData(data: VerifiedEvent): { event: VerifiedEvent; trace: TraceCarrier | undefined } {
  if (data === null || typeof data !== 'object' || !(TRACE_FIELD in data)) return { event: data, trace: undefined }
  const { [TRACE_FIELD]: trace, ...event } = data
  const valid =
    typeof trace === 'object' && trace !== null && Object.values(trace).every((value) => typeof value === 'string')
  return { event: event as VerifiedEvent, trace: valid ? (trace as TraceCarrier) : undefined }
}

/**
 * The BullMQ job id of an event: BullMQ forbids ':' and all-digit custom ids, so the `event_id` is
 * base64url-encoded behind a prefix. Deterministic, so a second delivery finds the first job.
 *
 * @example
 * const job = await bullQueue.getJob(jobIdFor('evt_123')) // 'evt-ZXZ0XzEyMw'
 */
export function jobIdFor(eventId: string): string {
  return JOB_ID_PREFIX + Buffer.from(eventId, 'utf8').toString('base64url')
}

/** The `event_id` a job id was made from, or undefined for a job payhooks did not add. */
export function eventIdOf(jobId: string | undefined): string | undefined {
  if (!jobId?.startsWith(JOB_ID_PREFIX)) return undefined
  return Buffer.from(jobId.slice(JOB_ID_PREFIX.length), 'base64url').toString('utf8')
}
