import type { VerifiedEvent } from '@payhooks/core'
import type { Queue } from 'bullmq'

/** One job to add: BullMQ's `addBulk` entry for an event. */
export interface JobToAdd {
  name: string
  data: VerifiedEvent
  jobId: string
}

interface Pending {
  job: JobToAdd
  waiters: { resolve: () => void; reject: (error: unknown) => void }[]
}

/** Adds jobs in batches; {@link JobBatcher.flush} sends what is collected at once. */
export interface JobBatcher {
  add(job: JobToAdd): Promise<void>
  /** Sends the collected jobs now, and resolves once every batch sent so far has settled. */
  flush(): Promise<void>
}

/**
 * Collects the jobs added during one turn of the event loop (every request whose bytes arrived in the same
 * poll phase) and sends them with one `addBulk` from `setImmediate`, or as soon as `maxSize` are collected.
 * Each caller's promise settles with its batch: a failed `addBulk` rejects every caller in it, even when Redis
 * took some of its jobs (it pipelines one script per job and throws the first error); their deliveries are
 * answered non-2XX and the redeliveries find those jobs by id. Two copies of one job id in a batch make one
 * entry, and both callers settle with it, as two single `add` calls would (the second leaves the job as it is).
 */
export function jobBatcher(
  queue: Pick<Queue<VerifiedEvent>, 'addBulk'>,
  maxSize: number,
  send: (addBulk: () => Promise<unknown>) => Promise<unknown>,
): JobBatcher {
  let collected = new Map<string, Pending>()
  let scheduled = false
  const inFlight = new Set<Promise<void>>()

  function sendCollected(): void {
    if (collected.size === 0) return
    const batch = [...collected.values()]
    collected = new Map()
    const jobs = batch.map(({ job }) => ({ name: job.name, data: job.data, opts: { jobId: job.jobId } }))
    const settled = send(() => queue.addBulk(jobs)).then(
      () => {
        for (const { waiters } of batch) for (const waiter of waiters) waiter.resolve()
      },
      (error: unknown) => {
        for (const { waiters } of batch) for (const waiter of waiters) waiter.reject(error)
      },
    )
    inFlight.add(settled)
    void settled.finally(() => inFlight.delete(settled))
  }

  return {
    add(job) {
      return new Promise<void>((resolve, reject) => {
        const same = collected.get(job.jobId)
        if (same) {
          same.waiters.push({ resolve, reject })
          return
        }
        collected.set(job.jobId, { job, waiters: [{ resolve, reject }] })
        if (collected.size >= maxSize) sendCollected()
        else if (!scheduled) {
          scheduled = true
          setImmediate(() => {
            scheduled = false
            sendCollected()
          })
        }
      })
    },
    async flush() {
      sendCollected()
      await Promise.all(inFlight)
    },
  }
}
