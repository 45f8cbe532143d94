import type { NextFunction, Request, Response } from 'express'
import { nodeRequest, parsedBody, readBody, writeNode } from './node.js'
import type { Board, BoardRequest } from './types.js'

/**
 * The board as Express middleware: `app.use('/admin/payhooks', expressBoard(board))`. `authorize` gets Express's
 * `req` (after the middleware before it: your session, passport...). A body already parsed by `express.json()` is
 * used as is.
 *
 * @example
 * const board = createBoard({ webhooks, authorize: (req: express.Request) => req.get('x-ops') === 'yes' })
 * app.use('/admin/payhooks', expressBoard(board))
 */
export function expressBoard(board: Board<Request>): (req: Request, res: Response, next: NextFunction) => void {
  return (req, res, next) => {
    const parsed = req.body as unknown
    const body = parsed !== undefined && req.readableEnded ? parsedBody(parsed) : () => readBody(req)
    // Mounted with app.use, req.url is the rest under the mount; at the mount itself it is '/' and
    // originalUrl tells whether the slash was there.
    const slash = req.originalUrl.split('?')[0]?.endsWith('/') ?? true
    const url = req.url === '/' && !slash && req.baseUrl !== '' ? '' : req.url
    writeNode(board as Board<never>, nodeRequest(req, req.baseUrl, url, req, body) as BoardRequest<never>, res).catch(
      next,
    )
  }
}
