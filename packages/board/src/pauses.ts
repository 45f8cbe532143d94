// Pauses on the board: the overview's panel (what is paused, and every type one may pause), and the POSTs that pause
// and resume a type. A resume answers once the pause is lifted; the replay of what was parked meanwhile runs on,
// and is audited when it ends.
import { EVENT_TYPES, type Pause, type Webhooks } from '@payhooks/core'
import { type Answer, type Audit, problem } from './api.js'
import { BadQuery } from './letters.js'
import type { BoardLogger } from './types.js'

// biome-ignore lint/suspicious/noControlCharactersInRegex: matching them is the point
const CONTROL = /[\u0000-\u001f\u007f]/

type Pausable = Pick<Webhooks<unknown>, 'pause' | 'resume' | 'paused'>

/** The receiver's pause controls, when it has them (a receiver older than pauses has none). */
export function pausesOf(webhooks: object): Pausable | undefined {
  const candidate = webhooks as Partial<Pausable>
  return typeof candidate.pause === 'function' &&
    typeof candidate.resume === 'function' &&
    typeof candidate.paused === 'function'
    ? (candidate as Pausable)
    : undefined
}

const pauseJson = (pause: Pause) => ({
  eventType: pause.eventType,
  reason: pause.reason,
  since: pause.since.toISOString(),
  by: pause.by ?? null,
})

/** The overview's `paused` panel: the pauses in force, and the types a pause button is shown for. */
export async function pausedPanel(webhooks: object) {
  const pausable = pausesOf(webhooks)
  if (!pausable) return null
  const pauses = await pausable.paused()
  const types = [...new Set([...EVENT_TYPES, ...pauses.map((pause) => pause.eventType).filter((t) => t !== '*')])]
  return { pauses: pauses.map(pauseJson), types }
}

function typeFrom(body: Record<string, unknown>): string {
  const eventType = body.eventType
  if (typeof eventType !== 'string' || eventType === '' || eventType.length > 200) {
    throw new BadQuery("eventType must be an event type or '*'")
  }
  return eventType
}

export async function pauseType(webhooks: object, body: Record<string, unknown>, audit: Audit): Promise<Answer> {
  const pausable = pausesOf(webhooks)
  if (!pausable) return problem(405, 'this receiver cannot pause')
  const eventType = typeFrom(body)
  const reason = body.reason ?? ''
  if (typeof reason !== 'string' || reason.length > 200 || CONTROL.test(reason)) {
    throw new BadQuery('reason must be one line of at most 200 characters')
  }
  const pause = await pausable.pause(eventType, { reason })
  await audit({ action: 'pause', eventType, reason })
  return { status: 200, json: pauseJson(pause) }
}

export async function resumeType(
  webhooks: object,
  body: Record<string, unknown>,
  audit: Audit,
  logger: BoardLogger,
): Promise<Answer> {
  const pausable = pausesOf(webhooks)
  if (!pausable) return problem(405, 'this receiver cannot pause')
  const eventType = typeFrom(body)
  const lifted = await pausable.resume(eventType, { replay: false })
  // The replay of the type's paused letters runs on after the answer (it may take minutes), audited when done.
  void pausable
    .resume(eventType)
    .then((result) =>
      audit({
        action: 'resume',
        eventType,
        ...(result.replay
          ? { report: { tried: result.replay.tried, processed: result.replay.processed, failed: result.replay.failed } }
          : {}),
      }),
    )
    .catch((error: unknown) => {
      logger.warn(
        { code: 'board_resume_replay_failed', event_type: eventType },
        `payhooks board: the replay after resuming ${eventType} failed: ${(error as Error)?.message}`,
      )
    })
  return { status: 200, json: { resumed: lifted.resumed, replaying: true } }
}
