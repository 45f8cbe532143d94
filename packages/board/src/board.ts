import { type Answer, countParked, deleteSelected, listLetters, oneLetter, problem, replaySelected } from './api.js'
import { auditLine } from './audit-line.js'
import { eventTimeline, journalOf, listEvents } from './events.js'
import { heldKeys, instanceStats, secretUsage } from './instance.js'
import { BadQuery, filterFrom } from './letters.js'
import { sharedOverview } from './overview-shared.js'
import { asset, page } from './page.js'
import { pauseType, resumeType } from './pauses.js'
import { replayBatch } from './replay-batches.js'
import {
  CSRF_HEADER,
  checkAllowedOrigins,
  cookieToken,
  newToken,
  SECURITY_HEADERS,
  stateChangeRefusal,
  tokenCookie,
} from './security.js'
import {
  type Board,
  type BoardAuditEntry,
  type BoardLogger,
  type BoardOptions,
  type BoardRequest,
  type BoardResponse,
  BodyTooLargeError,
  MAX_BODY_BYTES,
} from './types.js'

const json = (answer: Answer): BoardResponse => ({
  status: answer.status,
  headers: { ...SECURITY_HEADERS, 'content-type': 'application/json; charset=utf-8' },
  body: JSON.stringify(answer.json),
})

const text = (status: number, body: string, headers: Record<string, string> = {}): BoardResponse => ({
  status,
  headers: { ...SECURITY_HEADERS, 'content-type': 'text/plain; charset=utf-8', ...headers },
  body,
})

/** The default logger: one line each on the console, the message alone (it says everything the fields do). */
const CONSOLE_LINES: BoardLogger = {
  warn: (_fields, message) => console.warn(message),
  info: (_fields, message) => console.info(message),
}

const LETTER = /^\/api\/dead-letters\/([^/]+)$/
const EVENT = /^\/api\/events\/([^/]+)$/

/** The id in a path segment, or undefined when it is not valid percent-encoding. */
function idOf(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment)
  } catch {
    return undefined
  }
}

/**
 * An operator console over `webhooks.deadLetters`: a page and a JSON API listing dead letters with filters and
 * pages, showing one whole, replaying (one, the selected, or all matching a filter after confirming the count)
 * and deleting; with a journal (`createWebhooks({ journal })`), an Events page: an event's every answer, searched by
 * its id, and the fleet's answers filtered and paged. Every request goes through your `authorize`; replays and deletes need
 * an `Origin` the board was configured with (`origin`, `allowedOrigins`; or the address it is reached by, such as
 * `http://127.0.0.1:3000`) and the page's CSRF token, and are reported to `onAudit` and the logger. Serve it with a mount:
 * `expressBoard` (`@payhooks/board/express`), `nodeBoard`, `honoBoard`, `koaBoard` or `fastifyBoard`.
 *
 * @example
 * import { createBoard } from '@payhooks/board'
 * import { expressBoard } from '@payhooks/board/express'
 *
 * const board = createBoard({
 *   webhooks,
 *   authorize: (req: express.Request) => req.session?.role === 'ops',
 *   origin: 'https://admin.example.com', // where operators open it
 * })
 * app.use('/admin/payhooks', expressBoard(board))
 */
export function createBoard<Request = unknown>(options: BoardOptions<Request>): Board<Request> {
  const { webhooks, authorize, readOnly = false, actor, onAudit, replayBatchSize = 50 } = options
  const allowedOrigins = [
    ...checkAllowedOrigins(options.origin === undefined ? [] : [options.origin], 'origin'),
    ...checkAllowedOrigins(options.allowedOrigins ?? []),
  ]
  const logger = options.logger ?? CONSOLE_LINES
  if (!webhooks?.deadLetters) throw new TypeError('createBoard: webhooks must be a receiver from createWebhooks')
  if (!Number.isSafeInteger(replayBatchSize) || replayBatchSize < 1 || replayBatchSize > 500) {
    throw new RangeError('createBoard: replayBatchSize must be a whole number from 1 to 500')
  }
  if (authorize !== undefined && typeof authorize !== 'function') {
    throw new TypeError('createBoard: authorize must be a function (request) => boolean')
  }
  if (!authorize) {
    if (options.unsafeNoAuthorization !== true) {
      throw new TypeError(
        'createBoard: authorize is required (your own check of the request); for local development only, pass unsafeNoAuthorization: true',
      )
    }
    if (process.env.NODE_ENV === 'production') {
      throw new Error('createBoard: unsafeNoAuthorization is refused when NODE_ENV is production')
    }
    logger.warn(
      { code: 'board_no_authorization' },
      'payhooks board: no authorization (unsafeNoAuthorization): anyone who reaches it can replay and delete dead letters; development only',
    )
  }

  async function audit(request: BoardRequest<Request>, entry: Omit<BoardAuditEntry, 'actor' | 'at'>) {
    const full: BoardAuditEntry = { ...entry, actor: actor ? await actor(request.native) : undefined, at: new Date() }
    const { fields, message } = auditLine(full)
    if (logger.info) logger.info(fields, message)
    else logger.warn(fields, message)
    try {
      await onAudit?.(full)
    } catch (error) {
      logger.warn({ code: 'board_audit_failed' }, `payhooks board: onAudit threw: ${(error as Error)?.message}`)
    }
  }

  async function change(request: BoardRequest<Request>): Promise<BoardResponse> {
    if (readOnly) return json(problem(403, 'read-only board'))
    const refusal = stateChangeRefusal(request, allowedOrigins)
    if (refusal) return json(problem(403, refusal))
    let body: Record<string, unknown>
    try {
      const parsed = JSON.parse(await request.body())
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error()
      body = parsed
    } catch (error) {
      if (error instanceof BodyTooLargeError) return json(problem(413, `body over ${MAX_BODY_BYTES} bytes`))
      return json(problem(400, 'body must be a JSON object'))
    }
    const record = (entry: Omit<BoardAuditEntry, 'actor' | 'at'>) => audit(request, entry)
    switch (request.path) {
      case '/api/dead-letters/replay':
        return json(await replaySelected(webhooks, body, record))
      case '/api/dead-letters/replay-matching':
        return json(await replayBatch(webhooks, body, record, replayBatchSize))
      case '/api/dead-letters/delete':
        return json(await deleteSelected(webhooks, body, record))
      case '/api/pause':
        return json(await pauseType(webhooks, body, record))
      case '/api/resume':
        return json(await resumeType(webhooks, body, record, logger))
      default:
        return json(problem(404, 'not found'))
    }
  }

  async function read(request: BoardRequest<Request>): Promise<BoardResponse> {
    const { path } = request
    // Relative URLs in the page need the trailing slash.
    if (path === '') return text(308, 'Moved', { location: `${request.base}/` })
    if (path === '/') {
      const token = cookieToken(request) ?? newToken()
      return {
        status: 200,
        headers: {
          ...SECURITY_HEADERS,
          'content-type': 'text/html; charset=utf-8',
          'set-cookie': tokenCookie(token, request),
        },
        body: page(token),
      }
    }
    if (path.startsWith('/assets/')) {
      const file = asset(path.slice('/assets/'.length))
      if (!file) return text(404, 'Not found')
      return { status: 200, headers: { ...SECURITY_HEADERS, 'content-type': file.type }, body: file.body }
    }
    if (path === '/api/session') {
      return json({
        status: 200,
        json: {
          readOnly,
          canDelete: !readOnly && typeof webhooks.deadLetters.delete === 'function',
          durable: webhooks.deadLetters.durable ?? null,
          journal: journalOf(webhooks) !== undefined,
          csrfHeader: CSRF_HEADER,
        },
      })
    }
    if (path === '/api/overview') return json({ status: 200, json: await sharedOverview(webhooks) })
    if (path === '/api/stats') return json({ status: 200, json: instanceStats(webhooks) })
    if (path === '/api/secrets') return json({ status: 200, json: secretUsage(webhooks) })
    if (path === '/api/ordering-keys') {
      const limit = Number(request.query.get('limit') || 200)
      if (!Number.isSafeInteger(limit) || limit < 1 || limit > 500) throw new BadQuery('limit must be 1 to 500')
      return json({ status: 200, json: await heldKeys(webhooks, limit) })
    }
    if (path === '/api/dead-letters') return json(await listLetters(webhooks, request.query))
    if (path === '/api/dead-letters/count') {
      const filter = filterFrom((name) => request.query.get(name))
      return json({ status: 200, json: { count: await countParked(webhooks, filter) } })
    }
    if (path === '/api/events') return json(await listEvents(webhooks, request.query))
    const [letter, event] = [LETTER.exec(path)?.[1], EVENT.exec(path)?.[1]]
    if (letter || event) {
      const eventId = idOf((letter ?? event) as string)
      if (eventId === undefined) return json(problem(400, 'bad event id'))
      return json(letter ? await oneLetter(webhooks, eventId) : await eventTimeline(webhooks, eventId))
    }
    return path.startsWith('/api/') ? json(problem(404, 'not found')) : text(404, 'Not found')
  }

  return {
    readOnly,
    async handle(request) {
      try {
        if (authorize && !(await authorize(request.native))) {
          return request.path.startsWith('/api/') ? json(problem(403, 'not authorized')) : text(403, 'Forbidden')
        }
        if (request.method === 'GET' || request.method === 'HEAD') return await read(request)
        if (request.method === 'POST') return await change(request)
        return text(405, 'Method not allowed', { allow: 'GET, HEAD, POST' })
      } catch (error) {
        if (error instanceof BadQuery) return json(problem(400, error.message))
        logger.warn(
          { code: 'board_error', path: request.path },
          `payhooks board: ${request.method} ${request.path} failed: ${(error as Error)?.message}`,
        )
        return json(problem(500, 'the board could not answer; see the logs'))
      }
    },
  }
}
