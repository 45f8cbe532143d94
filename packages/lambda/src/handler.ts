import { STATUS_CODES } from 'node:http'
import {
  InternalError,
  PayloadTooLargeError,
  type RawBody,
  SIGNATURE_HEADER,
  type WebhookResult,
  type Webhooks,
} from '@payhooks/core'

/** The part of a `createWebhooks()` receiver the handler uses. */
export type LambdaReceiver = Pick<Webhooks<unknown>, 'receive' | 'reject' | 'maxBodyBytes'>

/**
 * The fields the handler reads from an HTTP event: API Gateway HTTP API (payload 2.0), Lambda
 * function URLs, API Gateway REST API (payload 1.0) and Application Load Balancer events all fit,
 * so `@types/aws-lambda`'s event types can be passed without installing anything here.
 */
export interface LambdaHttpEvent {
  body?: string | null
  isBase64Encoded?: boolean
  headers?: Record<string, string | undefined> | null
  /** REST API events, and ALB events from a target group with multi-value headers enabled. */
  multiValueHeaders?: Record<string, string[] | undefined> | null
  /** REST API and ALB events. */
  httpMethod?: string
  requestContext?: object & {
    /** HTTP API and function URL events. */
    http?: { method?: string; sourceIp?: string }
    /** REST API events. */
    identity?: { sourceIp?: string }
    /** Present only in ALB events. */
    elb?: unknown
  }
}

/**
 * What the handler returns: `{ statusCode, headers, body }`, which API Gateway (both payload versions)
 * and function URLs turn into the HTTP response. For ALB events it adds the `statusDescription` and
 * `isBase64Encoded` ALB requires, and answers in `multiValueHeaders` when the event came in them.
 */
export interface LambdaHttpResult {
  statusCode: number
  headers?: Record<string, string>
  multiValueHeaders?: Record<string, string[]>
  body: string
  statusDescription?: string
  isBase64Encoded?: boolean
}

function headerLookup(event: LambdaHttpEvent): (name: string) => string | undefined {
  const single = event.headers ?? undefined
  const multi = event.multiValueHeaders ?? undefined
  return (name) => {
    const value = single?.[name] ?? multi?.[name]?.[0]
    if (value !== undefined) return value
    // REST API events keep the client's spelling (`Service-Hmac-Sha256`); the others are lower-case.
    for (const key in single) if (key.toLowerCase() === name) return single[key]
    for (const key in multi) if (key.toLowerCase() === name) return multi[key]?.[0]
    return undefined
  }
}

/**
 * The client's address as the event's source saw it: `sourceIp` of API Gateway and function URLs; behind an ALB,
 * the last address of `x-forwarded-for`, the one the balancer appended (those before it are the client's word).
 */
function sourceIp(event: LambdaHttpEvent, getHeader: (name: string) => string | undefined): string | undefined {
  const context = event.requestContext
  const ip = context?.http?.sourceIp ?? context?.identity?.sourceIp
  if (ip !== undefined || context?.elb === undefined) return ip
  return getHeader('x-forwarded-for')?.split(',').at(-1)?.trim() || undefined
}

function toResult(event: LambdaHttpEvent, { status, headers: answerHeaders, body }: WebhookResult): LambdaHttpResult {
  // The body arrived whole and API Gateway, function URLs and ALB own the connection: no hop-by-hop header.
  let headers = answerHeaders
  if (headers.connection !== undefined) {
    const { connection: _, ...rest } = headers
    headers = rest
  }
  if (event.requestContext?.elb === undefined) return { statusCode: status, headers, body }
  const description = `${status} ${STATUS_CODES[status] ?? ''}`.trimEnd()
  if (!event.multiValueHeaders) {
    return { statusCode: status, statusDescription: description, isBase64Encoded: false, headers, body }
  }
  const multiValueHeaders: Record<string, string[]> = {}
  for (const name in headers) multiValueHeaders[name] = [headers[name] as string]
  return { statusCode: status, statusDescription: description, isBase64Encoded: false, multiValueHeaders, body }
}

/**
 * AWS Lambda handler for the payment service's webhooks, behind API Gateway (HTTP API with payload
 * 2.0, or REST API with payload 1.0), a Lambda function URL, or an Application Load Balancer. It
 * hands the exact body to `webhooks.receive` (decoded from base64 to bytes when the event says so)
 * and returns core's answer in the shape the event's source expects. Verification, dedupe, status
 * codes and the deadline are all `@payhooks/core`'s.
 *
 * Once the handler returns, Lambda freezes the environment: handlers still running at `deadlineMs`
 * are suspended, not finished. Set the function's timeout above `deadlineMs`, keep handlers short or
 * use the queue mode, and use a shared store (`redisStore` from `@payhooks/redis`), since instances
 * come and go.
 *
 * @example
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, store: redisStore(new Redis(process.env.REDIS_URL!)) })
 * webhooks.on('transaction_settled', (event) => console.log(event.data.settlement_amount))
 * export const handler = lambdaWebhooks(webhooks)
 */
export function lambdaWebhooks(webhooks: LambdaReceiver): (event: LambdaHttpEvent) => Promise<LambdaHttpResult> {
  const limit = webhooks.maxBodyBytes
  return async function payhooksLambda(event) {
    let result: WebhookResult
    try {
      const method = event.requestContext?.http?.method ?? event.httpMethod
      const getHeader = headerLookup(event)
      // Unsigned (or not a POST): the body is not even looked at, core answers 401 (405) at once.
      const skipped = (method !== undefined && method !== 'POST') || !getHeader(SIGNATURE_HEADER)
      let body: RawBody = skipped ? '' : (event.body ?? '')
      if (!skipped && event.isBase64Encoded) body = Buffer.from(body, 'base64')
      const size = typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength
      const remoteAddress = sourceIp(event, getHeader)
      result =
        size > limit
          ? webhooks.reject(new PayloadTooLargeError(limit), remoteAddress)
          : await webhooks.receive({ method, body, getHeader, remoteAddress })
    } catch (error) {
      result = webhooks.reject(new InternalError(error))
    }
    return toResult(event, result)
  }
}
