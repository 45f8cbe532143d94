import { answerHint } from './answer-hints.js'
import type { PostResult } from './send.js'
import type { SandboxAttempt } from './types.js'

/** The attempt a send made, as the log shows it, with the hint of its answer if any. */
export function attemptOf(
  kind: SandboxAttempt['kind'],
  retry: number | undefined,
  time: number,
  result: PostResult,
): SandboxAttempt {
  const attempt: SandboxAttempt = {
    kind,
    ...(retry === undefined ? {} : { retry }),
    time,
    at: new Date(time).toISOString(),
    ...(result.status === undefined ? {} : { status: result.status }),
    ok: result.ok,
    ...(result.error === undefined ? {} : { error: result.error }),
    latencyMs: result.latencyMs,
    ...(result.response === undefined ? {} : { response: result.response }),
    signature: result.signature,
  }
  const hint = answerHint(result.status, result.response)
  if (hint) attempt.hint = hint
  return attempt
}
