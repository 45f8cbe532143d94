import { Job, type Worker } from 'bullmq'
import type { Cluster, Redis } from 'ioredis'

export const noop = () => {}

/** A second look after the first, for a waiter that registered just after the holder's run ended. */
const SECOND_LOOK_MS = 1000

/**
 * The jobs delayed because their ordering key was held (`in_progress` with an `orderingKey`), by key: one Redis set
 * per key (`<prefix>:<queue>:ordering-waiters:<key>`, beside the queue's keys, so in its slot on a Cluster), expiring
 * with the delay of its last waiter (they wait for the same lease). When a run that held a key ends (handled, failed or given up), its worker
 * promotes the key's waiters (delayed to waiting) rather than leaving them to the end of the holder's lease: one
 * takes the key, the others wait again. A waiter registers after it is delayed, so a promote finds it delayed; one
 * that registers just after the holder's worker looked is found by a second look a second later, or else waits for
 * its delay as before. Failures are ignored: the delay stands.
 */
export function keyWaiters(client: Redis | Cluster, worker: Worker, keyPrefix: string) {
  const timers = new Set<ReturnType<typeof setTimeout>>()
  let stopped = false
  const promote = async (key: string) => {
    const [[, ids] = []] =
      (await client
        .multi()
        .smembers(keyPrefix + key)
        .del(keyPrefix + key)
        .exec()) ?? []
    if (!Array.isArray(ids)) return
    await Promise.all(
      ids.map(async (id: string) => {
        // Not delayed any more (running, or promoted by another look): nothing to do.
        const job = await Job.fromId(worker as never, id).catch(() => undefined)
        await job?.promote().catch(noop)
      }),
    )
  }
  return {
    /** Registers job `id` as waiting for `key`, for at most `delayMs` (its delay). */
    add: (key: string, id: string, delayMs: number) =>
      client
        .multi()
        .sadd(keyPrefix + key, id)
        .pexpire(keyPrefix + key, Math.ceil(delayMs) + SECOND_LOOK_MS)
        .exec(),
    /** The run that held `key` ended: promotes its waiters now, and again a second later. Never rejects. */
    handOn(key: string) {
      if (stopped) return
      promote(key).catch(noop)
      const timer = setTimeout(() => {
        timers.delete(timer)
        if (!stopped) promote(key).catch(noop)
      }, SECOND_LOOK_MS)
      timer.unref?.()
      timers.add(timer)
    },
    stop() {
      stopped = true
      for (const timer of timers) clearTimeout(timer)
      timers.clear()
    },
  }
}
