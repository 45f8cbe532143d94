/** One problem found in a request or a response, as a dotted path and a message that never quotes a value. */
export interface Issue {
  /** Dotted path to the field, such as `data.signature_secret`; empty for the whole value. */
  path: string
  message: string
}

/**
 * Base class of every failure of a call that was sent to the service. Messages are one line. No
 * part of the error (message, `statusText`, `body`, `cause` chain, any other field) holds the reseller
 * key, its secret part, the API key or `username:key`, whether the server echoed them as is,
 * JSON-escaped, URL-encoded, as HTML entities, in another case, base64-encoded or cut to 16 characters or
 * more: each is replaced with `[redacted]`. A kept `body` has the value of every credential-named field
 * (`signature_secret`, `token`…) replaced too, whatever the body's shape. When the API key
 * or the reseller key's secret part is shorter than 8 characters it cannot be told apart from ordinary
 * words, so server text is left out instead (`statusText` empty, `body` a `[the service's text is withheld: …]`
 * notice); a 401 or 403 still says in the message that the service refused the credentials.
 *
 * @example
 * try {
 *   await client.subscriptions.list()
 * } catch (error) {
 *   if (error instanceof PayhooksClientError) logger.warn(error.message) // safe to log
 *   else throw error
 * }
 */
export class PayhooksClientError extends Error {
  override name = 'PayhooksClientError'
  constructor(
    /** Client method, such as `subscriptions.create`. */
    readonly operation: string,
    readonly method: string,
    /** Request path below `baseUrl`, such as `/ps/webhook/subscription`. */
    readonly path: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options)
  }

  /** Name, message and the typed fields; never a credential. */
  toJSON(): Record<string, unknown> {
    return { ...(this as object), name: this.name, message: this.message }
  }
}

const SNIPPET_LENGTH = 300
/** What 401 and 403 mean here, said in the message: the service's own text may be withheld (see below). */
const REFUSALS: Record<number, string> = {
  401: 'the service refused the credentials',
  403: 'the service refused this call for these credentials',
}

function snippet(body: string): string {
  const line = body.replace(/\s+/g, ' ').trim()
  return line.length > SNIPPET_LENGTH ? `${line.slice(0, SNIPPET_LENGTH)}…` : line
}

/**
 * The service answered with a status outside 2XX. Redirects are not followed (credentials must not
 * travel to another address), so a 3XX lands here too. `statusText` is the reason phrase and `body`
 * the answer text, both with the credentials and credential-named fields redacted: the spec does not
 * show error bodies, so nothing is parsed out of it.
 *
 * @example
 * const subscription = await client.subscriptions.get(id).catch((error) => {
 *   if (error instanceof ApiError && error.status === 404) return undefined
 *   throw error
 * })
 */
export class ApiError extends PayhooksClientError {
  override name = 'ApiError'
  constructor(
    operation: string,
    method: string,
    path: string,
    readonly status: number,
    readonly statusText: string,
    readonly body: string,
    /**
     * Which subscriptions the call searched, set on a 404 of `webhooks.resend`: `reseller` for a reseller key
     * without a merchant id (the subscriptions made for all its merchants), `merchant` otherwise (one
     * merchant's). A subscription is visible only in the scope that made it, so a 404 may mean the other scope.
     */
    readonly searched?: SearchedScope,
  ) {
    const text = snippet(body)
    const meaning = REFUSALS[status]
    super(
      operation,
      method,
      path,
      `${operation}: ${method} ${path} answered ${status}${statusText ? ` ${statusText}` : ''}${meaning ? ` (${meaning})` : ''}${text ? `: ${text}` : ''}${searched ? `; ${scopeNote(searched)}` : ''}`,
    )
  }
}

/**
 * The subscriptions a call was answered from: a reseller key without a merchant id sees the reseller's own
 * (made with `{ scope: 'reseller' }`, for all its merchants); a merchant id or merchant credentials see that
 * merchant's. `merchantId` is undefined for merchant credentials (the service knows whose they are).
 */
export type SearchedScope = { scope: 'reseller' } | { scope: 'merchant'; merchantId: number | undefined }

function scopeNote(searched: SearchedScope): string {
  if (searched.scope === 'reseller') {
    return "searched the reseller's subscriptions for all its merchants (scope 'reseller'); one made for a merchant is searched with that merchantId"
  }
  const whose = searched.merchantId === undefined ? "this merchant's" : `merchant ${searched.merchantId}'s`
  return `searched ${whose} subscriptions only; one made for all of a reseller's merchants (scope 'reseller') is searched with the reseller key and no merchantId`
}

/**
 * The service answered 2XX, but not with JSON of the shape the spec shows. `body` is the answer text,
 * credentials and credential-named fields (`signature_secret`, `token`) redacted (JSON that needed it
 * is written again with `JSON.stringify`); `issues` say which fields were off, without quoting their values.
 *
 * @example
 * if (error instanceof InvalidResponseError) console.error(error.issues.map((i) => i.path).join(', '))
 */
export class InvalidResponseError extends PayhooksClientError {
  override name = 'InvalidResponseError'
  constructor(
    operation: string,
    method: string,
    path: string,
    readonly status: number,
    readonly body: string,
    readonly issues: Issue[],
  ) {
    const first = issues[0]
    super(
      operation,
      method,
      path,
      `${operation}: ${method} ${path} answered ${status} with an unexpected body${first ? `: ${first.path || '(root)'}: ${first.message}` : ''}${issues.length > 1 ? ` (+${issues.length - 1} more)` : ''}`,
    )
  }
}

/**
 * No complete answer within `timeoutMs`. The request may still have taken effect on the service,
 * so check (for example with `subscriptions.list`) before sending a create again.
 *
 * @example
 * await client.subscriptions.list({ timeoutMs: 5_000 }).catch((error) => {
 *   if (error instanceof TimeoutError) return { total_item_count: 0, data: [] }
 *   throw error
 * })
 */
export class TimeoutError extends PayhooksClientError {
  override name = 'TimeoutError'
  constructor(
    operation: string,
    method: string,
    path: string,
    readonly timeoutMs: number,
  ) {
    super(operation, method, path, `${operation}: ${method} ${path} got no answer within ${timeoutMs} ms`)
  }
}

/**
 * The request could not be sent or its answer not read (DNS, refused connection, reset). `cause`
 * holds a copy of fetch's error chain (same class for built-in errors, message, stack, `code`,
 * `errno`, `syscall`, `address`, `port`), credentials redacted and other fields (such as the raw
 * bytes undici keeps of an answer it could not parse) left out.
 *
 * @example
 * if (error instanceof NetworkError) console.error('service unreachable:', error.message)
 */
export class NetworkError extends PayhooksClientError {
  override name = 'NetworkError'
  constructor(operation: string, method: string, path: string, detail: string, cause: unknown) {
    super(operation, method, path, `${operation}: ${method} ${path} failed: ${detail}`, { cause })
  }
}

/**
 * Arguments of a client method that do not match what the spec allows; the call rejects with it
 * before anything is sent. A `TypeError`, since it is a programming error.
 *
 * @example
 * await client.subscriptions.create({ url: 'nope', event_types: [], is_active: true })
 * // InvalidRequestError: subscriptions.create: invalid arguments: url: must be an absolute URL (+1 more)
 */
export class InvalidRequestError extends TypeError {
  override name = 'InvalidRequestError'
  constructor(
    readonly operation: string,
    readonly issues: Issue[],
  ) {
    const first = issues[0]
    super(
      `${operation}: invalid arguments${first ? `: ${first.path || '(root)'}: ${first.message}` : ''}${issues.length > 1 ? ` (+${issues.length - 1} more)` : ''}`,
    )
  }
}
