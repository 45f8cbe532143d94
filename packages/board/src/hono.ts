import type { Context } from 'hono'
import { type Board, BodyTooLargeError, MAX_BODY_BYTES } from './types.js'

/**
 * The board as a Hono handler: `app.all('/admin/payhooks/*', honoBoard(board, { path: '/admin/payhooks' }))`
 * (and the same for `'/admin/payhooks'`). `authorize` gets Hono's context `c`.
 *
 * @example
 * const board = createBoard({ webhooks, authorize: (c: Context) => c.req.header('x-ops') === 'yes' })
 * const serve = honoBoard(board, { path: '/admin/payhooks' })
 * app.all('/admin/payhooks', serve)
 * app.all('/admin/payhooks/*', serve)
 */
export function honoBoard(board: Board<Context>, options: { path: string }): (c: Context) => Promise<Response> {
  const base = options.path.replace(/\/+$/, '')
  if (!base.startsWith('/')) throw new TypeError("honoBoard: path must start with '/'")
  return async (c) => {
    const url = new URL(c.req.url)
    const path = url.pathname.startsWith(base) ? url.pathname.slice(base.length) : url.pathname
    const answer = await board.handle({
      method: c.req.method,
      path,
      base,
      query: url.searchParams,
      header: (name) => c.req.header(name),
      body: async () => {
        const text = await c.req.text()
        if (Buffer.byteLength(text) > MAX_BODY_BYTES) throw new BodyTooLargeError()
        return text
      },
      secure: url.protocol === 'https:',
      native: c,
    })
    const body =
      c.req.method === 'HEAD' ? null : typeof answer.body === 'string' ? answer.body : Buffer.from(answer.body)
    return new Response(body, { status: answer.status, headers: answer.headers })
  }
}
