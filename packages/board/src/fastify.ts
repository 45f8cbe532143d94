import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { nodeRequest } from './node.js'
import { type Board, type BoardRequest, MAX_BODY_BYTES } from './types.js'

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
    fastify.removeAllContentTypeParsers()
    fastify.addContentTypeParser('*', { parseAs: 'string', bodyLimit: MAX_BODY_BYTES }, (_request, body, done) =>
      done(null, body),
    )
    const base = fastify.prefix.replace(/\/+$/, '')
    const handler = async (request: FastifyRequest, reply: FastifyReply) => {
      const rest = request.url.slice(base.length)
      const text = typeof request.body === 'string' ? request.body : ''
      const answer = await board.handle(
        nodeRequest(request.raw, base, rest, request, async () => text) as BoardRequest<FastifyRequest>,
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
