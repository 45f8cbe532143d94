import type { DeadLetter as CoreDeadLetter, VerifiedEvent } from '@payhooks/core'
import { parseCreatedAt } from '@payhooks/core'
import type { Job } from 'bullmq'
import { eventIdOf, splitJobData } from './jobs.js'

/**
 * An event whose handlers failed on every attempt, kept in BullMQ's failed set. It is also a dead letter of
 * `@payhooks/core` (see `bullmqDeadLetters`): `code` is `handler_failed`, `reason` the last failure, `parkedAt`
 * when it failed, and `body` the verified event as queued (JSON, UTF-8): the queue keeps the parsed event, not
 * the signed bytes, so `headers` is empty.
 */
export interface DeadLetter extends CoreDeadLetter {
  eventId: string
  eventType: string
  /** The verified event, as the handlers receive it. */
  event: VerifiedEvent
  /** Message of the last failure. */
  failedReason: string
  attemptsMade: number
  failedAt: Date | undefined
  /** BullMQ job id (see {@link jobIdFor}). */
  jobId: string
}

const encoder = new TextEncoder()

function createdAtOf(event: VerifiedEvent | undefined): Date | undefined {
  const time = typeof event?.created_at === 'string' ? parseCreatedAt(event.created_at) : Number.NaN
  return Number.isNaN(time) ? undefined : new Date(time)
}

/**
 * Moves a failed job back to the queue; false when it left the failed set in between (replayed or removed by
 * another caller): BullMQ's reprocessJob script then fails with JobNotInState or JobNotExist, whose messages
 * are all that tells them apart. Any other failure is thrown.
 */
export async function retryFailed(job: Job<VerifiedEvent>): Promise<boolean> {
  try {
    await job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true })
    return true
  } catch (error) {
    const message = error instanceof Error ? error.message : ''
    const lost = [
      `Job ${job.id} is not in the failed state. reprocessJob`,
      `Missing key for job ${job.id}. reprocessJob`,
    ]
    if (lost.includes(message)) return false
    throw error
  }
}

export function toDeadLetter(job: Job<VerifiedEvent>): DeadLetter {
  const event = job.data && splitJobData(job.data).event
  const failedAt = job.finishedOn ? new Date(job.finishedOn) : undefined
  const parkedAt = failedAt ?? new Date(job.timestamp)
  return {
    eventId: event?.event_id ?? eventIdOf(job.id) ?? '',
    eventType: event?.event_type ?? job.name,
    event,
    failedReason: job.failedReason,
    attemptsMade: job.attemptsMade,
    failedAt,
    jobId: job.id ?? '',
    body: encoder.encode(JSON.stringify(event ?? null)),
    headers: {},
    code: 'handler_failed',
    reason: job.failedReason ?? '',
    createdAt: createdAtOf(event),
    parkedAt,
    firstParkedAt: parkedAt,
    parkCount: 1,
    status: 'parked',
    replayedAt: undefined,
  }
}
