import type { IncomingMessage } from 'node:http'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { nodeRequest, readBody } from './node.js'
import type { Board, BoardRequest } from './types.js'

/**
 * The board as a Fastify plugin: `app.register(fastifyBoard(board), { prefix: '/admin/payhooks' })`. It reads
 * bodies as text in its own scope (your app's parsers are untouched). `authorize` gets Fastify's `request`.
 *
 * @example
 * const board = createBoard({ webhooks, authorize: (request: FastifyRequest) => request.headers['x-ops'] === 'yes' })
 * await app.register(fastifyBoard(board), { prefix: '/admin/payhooks' })
 */
export function fastifyBoard(board: Board<FastifyRequest>): (fastify: FastifyInstance) => Promise<void> {
  return async (fastify) => {
    // Bodies are left unread here: the board reads one (at most MAX_BODY_BYTES) only after authorize and the CSRF
    // checks, so its 413 comes after them and with its security headers, never Fastify's own before them.
    fastify.removeAllContentTypeParsers()
    fastify.addContentTypeParser('*', (_request, payload, done) => done(null, payload))
    const base = fastify.prefix.replace(/\/+$/, '')
    const handler = async (request: FastifyRequest, reply: FastifyReply) => {
      const rest = request.url.slice(base.length)
      const payload = request.body as IncomingMessage | undefined
      const body = payload === undefined ? async () => '' : () => readBody(payload)
      const answer = await board.handle(
        nodeRequest(request.raw, base, rest, request, body) as BoardRequest<FastifyRequest>,
      )
      reply.code(answer.status).headers(answer.headers)
      return reply.send(
        request.method === 'HEAD'
          ? undefined
          : typeof answer.body === 'string'
            ? answer.body
            : Buffer.from(answer.body),
      )
    }
    fastify.route({
      method: ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH'],
      url: '/',
      handler,
      exposeHeadRoute: false,
    })
    fastify.route({
      method: ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH'],
      url: '/*',
      handler,
      exposeHeadRoute: false,
    })
  }
}
