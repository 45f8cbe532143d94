// The cursors that continue a replay-all run's batches: signed with a key this process draws at random, so only it
// accepts them; the run checks each is its current step, so a replayed or stale one is refused too.
import { sign, verify } from '../verify/signature.js'

/**
 * Why a batch was refused: `busy` (a run of another filter holds the store), `changed` (the run's count is not the
 * one confirmed: `count` says what it is), or a cursor `forged` or `stale`.
 */
export class ReplayRunError extends Error {
  constructor(
    readonly reason: 'busy' | 'changed' | 'forged' | 'stale',
    message: string,
    readonly count?: number,
  ) {
    super(message)
    this.name = 'ReplayRunError'
  }
}

let key: string | undefined

function cursorKey(): string {
  if (key === undefined) {
    const bytes = new Uint8Array(32)
    globalThis.crypto.getRandomValues(bytes)
    key = Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('')
  }
  return key
}

export const randomId = () => {
  const bytes = new Uint8Array(12)
  globalThis.crypto.getRandomValues(bytes)
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('')
}

export async function signCursor(runId: string, caller: string, step: number): Promise<string> {
  const payload = JSON.stringify([runId, caller, step])
  const signature = await sign(cursorKey(), payload)
  return `${encodeURIComponent(payload)}.${signature.replace(/^sha256=/, '')}`
}

export async function readCursor(cursor: unknown): Promise<[string, string, number]> {
  const forged = () => new ReplayRunError('forged', 'replayAll: the cursor is not one this process answered')
  if (typeof cursor !== 'string' || cursor.length > 500) throw forged()
  const dot = cursor.lastIndexOf('.')
  let payload: string
  try {
    payload = decodeURIComponent(cursor.slice(0, dot))
  } catch {
    throw forged()
  }
  if (dot < 0 || !(await verify(cursorKey(), payload, cursor.slice(dot + 1)))) throw forged()
  const [runId, caller, step] = JSON.parse(payload) as [string, string, number]
  return [runId, caller, step]
}
