import type { Pool } from 'mysql2/promise'

export type Logger = { warn?(message: string): void; error(message: string): void }

/**
 * Runs `statement` (a DELETE ... ORDER BY ... LIMIT ?, deleting at most `size` rows) until it deletes fewer: a sweep
 * over millions of rows never holds its locks for longer than one batch. Each batch on a connection of its own under
 * READ COMMITTED, which takes no gap locks (REPEATABLE READ's would hold up claims inserting beside the range).
 */
export async function inBatches(pool: Pool, statement: string, size: number): Promise<number> {
  let total = 0
  for (;;) {
    const connection = await pool.getConnection()
    let n: number
    try {
      await connection.query('SET TRANSACTION ISOLATION LEVEL READ COMMITTED')
      const [result] = await connection.query(statement, [size])
      n = (result as { affectedRows: number }).affectedRows
    } finally {
      connection.release()
    }
    total += n
    if (n < size) return total
  }
}

/**
 * An unref'd timer running `sweep` every `intervalMs` (a tick while the last run goes on is skipped), a failure
 * logged as one line; `stop()` clears it.
 */
export function startSweeper(
  sweep: () => Promise<unknown>,
  intervalMs: number,
  logger: Logger,
  what: string,
): { stop(): void } {
  let running = false
  const timer = setInterval(() => {
    if (running) return
    running = true
    sweep()
      .catch((error: unknown) => {
        const detail = error instanceof Error ? error.message : String(error)
        ;(logger.warn ?? logger.error).call(logger, `[payhooks] ${what} failed: ${detail.split('\n')[0]}`)
      })
      .finally(() => {
        running = false
      })
  }, intervalMs)
  timer.unref()
  return { stop: () => clearInterval(timer) }
}
