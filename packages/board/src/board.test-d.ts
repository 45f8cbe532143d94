import type { IncomingMessage } from 'node:http'
import { createWebhooks } from '@payhooks/core'
import type { Request } from 'express'
import type { Context } from 'koa'
import { describe, expectTypeOf, it } from 'vitest'
import { createBoard } from './board.js'
import { expressBoard } from './express.js'
import { koaBoard } from './koa.js'
import { nodeBoard } from './node.js'
import type { Board, BoardAuditEntry } from './types.js'

const webhooks = createWebhooks({ secret: 'whsec_types' })

describe('createBoard types', () => {
  it('takes the request type from authorize, and a mount takes only a board of its own request', () => {
    const board = createBoard({ webhooks, authorize: (req: Request) => req.get('x-ops') === 'yes' })
    expectTypeOf(board).toEqualTypeOf<Board<Request>>()
    expressBoard(board)
    // @ts-expect-error: a board whose authorize reads Express's req cannot be mounted on Koa
    koaBoard(board, { path: '/ops' })
    const koa = createBoard({ webhooks, authorize: async (ctx: Context) => ctx.state.user !== undefined })
    koaBoard(koa, { path: '/ops' })
    nodeBoard(createBoard({ webhooks, authorize: (req: IncomingMessage) => req.headers.host !== undefined }), {
      path: '/ops',
    })
  })

  it('types the audit entry, and refuses options that are not the board’s', () => {
    createBoard({
      webhooks,
      unsafeNoAuthorization: true,
      onAudit: (entry) => {
        expectTypeOf(entry).toEqualTypeOf<BoardAuditEntry>()
      },
    })
    // @ts-expect-error: readOnly is a boolean
    createBoard({ webhooks, authorize: () => true, readOnly: 'yes' })
    // @ts-expect-error: webhooks is required
    createBoard({ authorize: () => true })
  })
})
