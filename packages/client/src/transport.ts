import * as v from 'valibot'
import type { RequestOptions } from './api.js'
import type { ResolvedAuth } from './auth.js'
import { ApiError, InvalidResponseError, NetworkError, TimeoutError } from './errors.js'
import { type Redactor, redactSecretFields } from './redact.js'
import { toIssues } from './schemas.js'
import { checkTimeout } from './validations.js'

/**
 * Header that puts a reseller-key call in a merchant's context (spec 5); the client sets it from
 * `merchantId`.
 *
 * @example
 * request.headers.get(MERCHANT_ID_HEADER) // '1234'
 */
export const MERCHANT_ID_HEADER = 'Service-Merchant-Id'

/** What every call of one client shares. */
export interface Config {
  baseUrl: string
  auth: ResolvedAuth
  timeoutMs: number
  fetch: typeof globalThis.fetch | undefined
}

/** One request; `operation` names it in errors. */
export interface Call {
  operation: string
  method: 'GET' | 'POST' | 'PUT' | 'DELETE'
  path: string
  body?: unknown
  merchantId: number | undefined
  options: RequestOptions | undefined
}

/**
 * The answer text as an error may hold it: credentials and credential-named fields (`signature_secret`, `token`)
 * redacted, or a notice when the credentials are too short to redact.
 */
function serverBody(redactor: Redactor, text: string): string {
  return redactor.withheld && text !== '' ? `[${redactor.withheld}]` : redactor.text(redactSecretFields(text))
}

/** Sends one request; resolves with the answer text of a 2XX, rejects with a typed error otherwise. */
export async function send(config: Config, call: Call): Promise<{ status: number; text: string }> {
  const { operation, method, path, options } = call
  const timeoutMs = options?.timeoutMs === undefined ? config.timeoutMs : checkTimeout(options.timeoutMs, operation)
  const callerSignal = options?.signal
  callerSignal?.throwIfAborted()
  const timeout = AbortSignal.timeout(timeoutMs)
  const signal = callerSignal ? AbortSignal.any([callerSignal, timeout]) : timeout
  const headers: Record<string, string> = { accept: 'application/json', authorization: config.auth.header }
  if (call.merchantId !== undefined) headers[MERCHANT_ID_HEADER] = String(call.merchantId)
  let body: string | undefined
  if (call.body !== undefined) {
    body = JSON.stringify(call.body)
    headers['content-type'] = 'application/json'
  }
  const { redactor } = config.auth
  let response: Response
  let text: string
  try {
    // Redirects are not followed: the Authorization header (and the token call's body) must not move elsewhere.
    response = await (config.fetch ?? globalThis.fetch)(`${config.baseUrl}${path}`, {
      method,
      headers,
      body,
      signal,
      redirect: 'manual',
    })
    text = await response.text()
  } catch (error) {
    if (callerSignal?.aborted) throw callerSignal.reason
    if (timeout.aborted) throw new TimeoutError(operation, method, path, timeoutMs)
    const cause = (error as { cause?: { message?: unknown } } | undefined)?.cause
    const detail = typeof cause?.message === 'string' ? cause.message : String(error)
    // The cause is a scrubbed copy: undici's parser errors keep the raw bytes they choked on.
    const line = redactor.text(detail.split('\n')[0] ?? '')
    throw new NetworkError(operation, method, path, line, redactor.error(error))
  }
  if (response.status < 200 || response.status > 299) {
    const { status, statusText } = response
    throw new ApiError(operation, method, path, status, redactor.serverText(statusText), serverBody(redactor, text))
  }
  return { status: response.status, text }
}

/** {@link send}, then the answer parsed as JSON and checked against `schema`. */
export async function sendJson<S extends v.GenericSchema>(
  config: Config,
  call: Call,
  schema: S,
): Promise<v.InferOutput<S>> {
  const { status, text } = await send(config, call)
  const { redactor } = config.auth
  const fail = (issues: { path: string; message: string }[]) =>
    new InvalidResponseError(
      call.operation,
      call.method,
      call.path,
      status,
      serverBody(redactor, text),
      issues.map((issue) => ({ path: redactor.text(issue.path), message: redactor.text(issue.message) })),
    )
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    throw fail([{ path: '', message: text === '' ? 'empty body, expected JSON' : 'not JSON' }])
  }
  const result = v.safeParse(schema, json, { abortEarly: false })
  if (!result.success) throw fail(toIssues(result.issues))
  return result.output
}
