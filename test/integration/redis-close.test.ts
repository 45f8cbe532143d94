// Closing a receiver on Redis right after it was made (the CLI does: load the module, run one command, close): the
// start-up health check under way when close() is called is waited for, so no command goes out on the client after
// close() resolved. Before, the check went on after close(); the module's redis.quit() then made its next write fail
// with `[ioredis] Unhandled error event: write EPIPE` and a stack, printed after the command's correct result.
import { randomUUID } from 'node:crypto'
import { createWebhooks } from '@payhooks/core'
import { redisDeadLetterStore, redisStore } from '@payhooks/redis'
import { Redis } from 'ioredis'
import { beforeAll, describe, expect, it, vi } from 'vitest'

const REDIS_URL = process.env.REDIS_URL
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

beforeAll(() => {
  if (!REDIS_URL) throw new Error('REDIS_URL is not set: run the Redis tests through `pnpm test`')
})

describe('a receiver on Redis closed while its start-up check runs', () => {
  it('sends no command after close() resolved, and its client quits without an error', async () => {
    const redis = new Redis(REDIS_URL as string)
    const errors: unknown[] = []
    redis.on('error', (error) => errors.push(error))
    // Connected first: ioredis's own ready check (an INFO) is not the receiver's, and on a loaded machine the connection
    // could come up after a check that gave up at its deadline, so after close() resolved.
    await new Promise((ready) => redis.once('ready', ready))
    const sent: string[] = []
    let closed = false
    const sendCommand = redis.sendCommand.bind(redis)
    let first!: () => void
    const started = new Promise<void>((resolve) => {
      first = resolve
    })
    vi.spyOn(redis, 'sendCommand').mockImplementation((command, stream) => {
      if (closed && command.name !== 'quit') sent.push(command.name)
      first()
      return sendCommand(command, stream)
    })
    const prefix = `close:${randomUUID()}`
    const webhooks = createWebhooks({
      secret: 'whsec_redis_close',
      store: redisStore(redis, { keyPrefix: `${prefix}:` }),
      deadLetters: redisDeadLetterStore(redis, { keyPrefix: `{${prefix}}:` }),
      logger: { error() {} },
    })
    await started // the start-up check sent its first command
    await webhooks.close()
    closed = true
    await redis.quit()
    await sleep(300)
    expect(sent).toEqual([])
    expect(errors).toEqual([])
  })
})
