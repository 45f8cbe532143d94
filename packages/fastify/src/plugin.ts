import {
  InternalError,
  PayloadTooLargeError,
  SIGNATURE_HEADER,
  type WebhookResult,
  type Webhooks,
} from '@payhooks/core'
import { type NodeBodyRead, nodeAnswerHeaders, readNodeBody, receiveNodeRequest } from '@payhooks/core/node'
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'

/** The part of a `createWebhooks()` receiver the plugin uses. */
export type FastifyReceiver = Pick<Webhooks<unknown>, 'receive' | 'reject' | 'maxBodyBytes'>

/** Options of {@link fastifyWebhooks}, passed to `app.register`. */
export interface FastifyWebhooksOptions {
  /** The receiver built by `createWebhooks()`. */
  webhooks: FastifyReceiver
  /**
   * The route's path inside the plugin's context (a `prefix` given to `app.register` goes before it).
   * @default '/webhooks'
   */
  path?: string
}

const NO_BODY = new Uint8Array(0)
const FIX = 'Do not read the request stream in a hook before the webhook route.'
const ignore = () => {}

function send(reply: FastifyReply, result: WebhookResult): FastifyReply {
  return reply
    .code(result.status)
    .headers(nodeAnswerHeaders(result, reply.request.raw.httpVersionMajor))
    .send(result.body)
}

/**
 * Fastify plugin for the payment service's webhooks: a POST route that hands the exact body bytes
 * to `webhooks.receive` and answers with its result. Verification, dedupe, status codes and the
 * deadline are all `@payhooks/core`'s.
 *
 * It is deliberately not wrapped in `fastify-plugin`, so it runs in its own encapsulated context:
 * there it replaces every content-type parser with one that keeps the body as bytes (any content
 * type, or none), limited to `webhooks.maxBodyBytes` (answered with core's 413), while the rest of
 * the app keeps Fastify's JSON parser. The parser only starts the read: the route hands it to core
 * still arriving, so the receiver's deadline covers it (a body still arriving then is answered 408 and
 * its connection closed; Fastify's own `requestTimeout` is off by default). Other methods on the path
 * are answered 405 with `Allow: POST`.
 *
 * @example
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET! })
 * webhooks.on('transaction_settled', (event) => console.log(event.data.settlement_amount))
 * const app = Fastify()
 * await app.register(fastifyWebhooks, { webhooks, path: '/webhooks' })
 * await app.listen({ port: 3000 })
 */
export const fastifyWebhooks: FastifyPluginAsync<FastifyWebhooksOptions> = async function fastifyWebhooks(
  instance,
  options,
) {
  const { webhooks, path = '/webhooks' } = options
  const limit = webhooks.maxBodyBytes

  instance.removeAllContentTypeParsers()
  instance.addContentTypeParser('*', (request, payload, done) => {
    // Unsigned: left unread. The route hands core no body, which answers 401 with `connection: close`, so a sender
    // without the secret costs neither a read nor a buffer.
    if (!request.headers[SIGNATURE_HEADER]) {
      done(null, undefined)
      return
    }
    const length = request.headers['content-length']
    // Refused unread, as the route's answer (Fastify's own error path would add its own connection header).
    const read: NodeBodyRead =
      length !== undefined && Number(length) > limit
        ? { body: Promise.reject(new PayloadTooLargeError(limit)), stop: ignore }
        : readNodeBody(payload, limit)
    read.body.then(undefined, ignore) // the route awaits it; an app hook that answers first leaves it alone
    done(null, read)
  })
  instance.setErrorHandler(async (error, request, reply) => {
    const code = (error as { code?: unknown } | null)?.code
    // A Content-Type header that is no media type at all: Fastify refuses it before any parser, but
    // the signature does not cover it, so the bytes are read and verified all the same.
    if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE')
      return send(reply, await receiveNodeRequest(webhooks, request.raw, { fix: FIX, remoteAddress: () => request.ip }))
    throw error // to the app's error handler: the request never reached the route
  })

  instance.post(path, async function payhooksFastify(request: FastifyRequest, reply) {
    let result: WebhookResult
    try {
      const read = request.body as NodeBodyRead | undefined // what the parser above left, if the request has a body
      const headers = request.headers
      const getHeader = (name: string) => {
        const value = headers[name]
        return Array.isArray(value) ? value[0] : value
      }
      const remoteAddress = request.ip
      result = await webhooks.receive(
        read
          ? { body: read.body, getHeader, stopReading: read.stop, remoteAddress }
          : { body: NO_BODY, getHeader, remoteAddress },
      )
    } catch (error) {
      result = webhooks.reject(new InternalError(error))
    }
    return send(reply, result)
  })

  const methodNotAllowed = async (request: FastifyRequest, reply: FastifyReply) =>
    send(reply, await webhooks.receive({ method: request.method, body: '', getHeader: () => undefined }))
  instance.route({
    method: instance.supportedMethods.filter((method) => method !== 'POST'),
    url: path,
    exposeHeadRoute: false,
    onRequest: methodNotAllowed, // answers before any parser runs: a body sent with another method is never read
    handler: methodNotAllowed,
  })
}
