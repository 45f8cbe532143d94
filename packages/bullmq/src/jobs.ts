import { Buffer } from 'node:buffer'

/** Default BullMQ queue name of {@link bullmqQueue} and {@link startWorker}. */
export const DEFAULT_QUEUE_NAME = 'payhooks'
/** BullMQ's own default key prefix. Not 'payhooks': that is the dedupe store's default key prefix. */
export const DEFAULT_QUEUE_PREFIX = 'bull'

const JOB_ID_PREFIX = 'evt-'

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
