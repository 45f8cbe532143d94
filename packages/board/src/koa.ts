import type { Context, Next } from 'koa'
import { nodeRequest, parsedBody, readBody } from './node.js'
import type { Board, BoardRequest } from './types.js'

/**
 * The board as Koa middleware: `app.use(koaBoard(board, { path: '/admin/payhooks' }))`. Requests elsewhere go on to
 * `next`. `authorize` gets Koa's `ctx`. A body already parsed by a body parser is used as is.
 *
 * @example
 * const board = createBoard({ webhooks, authorize: (ctx: Koa.Context) => ctx.state.user?.role === 'ops' })
 * app.use(koaBoard(board, { path: '/admin/payhooks' }))
 */
export function koaBoard(
  board: Board<Context>,
  options: { path: string },
): (ctx: Context, next: Next) => Promise<void> {
  const base = options.path.replace(/\/+$/, '')
  if (!base.startsWith('/')) throw new TypeError("koaBoard: path must start with '/'")
  return async (ctx, next) => {
    const url = ctx.url
    const rest = url.slice(base.length)
    if (!url.startsWith(base) || !(rest === '' || rest.startsWith('/') || rest.startsWith('?'))) return next()
    const parsed = (ctx.request as { body?: unknown }).body
    const body = parsed !== undefined && ctx.req.readableEnded ? parsedBody(parsed) : () => readBody(ctx.req)
    const answer = await board.handle(nodeRequest(ctx.req, base, rest, ctx, body) as BoardRequest<Context>)
    // The body is set for HEAD too: Koa sends none for HEAD, and a null body would turn the status into 204.
    ctx.body = typeof answer.body === 'string' ? answer.body : Buffer.from(answer.body)
    ctx.status = answer.status
    ctx.set(answer.headers)
  }
}
