import type { DeadLetter, DeadLetterFilter, ReplayOutcome, Webhooks } from '@payhooks/core'

type MaybePromise<T> = T | Promise<T>

/**
 * What the board reads of a receiver: its dead letters; and, when the receiver has them, `health()`, `stats()`
 * (this process's deliveries and secrets), `heldKeys()` (the ordering keys its store holds) and `events` (the
 * journal every instance writes).
 */
export type BoardWebhooks = Pick<Webhooks<unknown>, 'deadLetters'>

/** An ordering key held now, as `webhooks.heldKeys()` lists it. */
export interface HeldKeyLike {
  key: string
  eventId: string
  eventType: string
  since: Date
  expiresAt: Date
}

/** A replay or a delete made from the board, as {@link BoardOptions.onAudit} and the logger get it. */
export interface BoardAuditEntry {
  action: 'replay' | 'replay_all' | 'delete' | 'pause' | 'resume'
  /** Who did it: what {@link BoardOptions.actor} returned, or undefined. */
  actor: string | undefined
  at: Date
  /**
   * The filter of a `replay_all`: the run's, as it started (its `parkedBefore` the moment it did), the same for
   * every batch of the run whatever a request continuing it sends.
   */
  filter?: DeadLetterFilter
  /** What each replay did (`replay`, `replay_all`). */
  outcomes?: { eventId: string; status: ReplayOutcome['status'] }[]
  /** The ids deleted, and those that were not there any more (`delete`). */
  deleted?: string[]
  notFound?: string[]
  /** The event type paused or resumed (`pause`, `resume`; `'*'` every type). */
  eventType?: string
  /** The reason given (`pause`). */
  reason?: string
  /** What the replay after a `resume` did, once it ended. */
  report?: { tried: number; processed: number; failed: number }
}

/** Where the board logs: `console`, pino, or an object of your own (pino's order: fields, then the message). */
export interface BoardLogger {
  warn(fields: Record<string, unknown>, message: string): void
  info?(fields: Record<string, unknown>, message: string): void
}

/** The options of {@link createBoard}. `Request` is the request your framework's mount hands `authorize`. */
export interface BoardOptions<Request = unknown> {
  /** The receiver whose dead letters the board shows and replays (through `webhooks.deadLetters`). */
  webhooks: BoardWebhooks
  /**
   * Your app's own check, for every request to the board (page, files and API): true lets it through, false
   * answers 403. Required, unless `unsafeNoAuthorization` is set.
   */
  authorize?: (request: Request) => MaybePromise<boolean>
  /**
   * Development only: no `authorize` at all. Logs a warning when the board is made, and throws when
   * `NODE_ENV` is `production`.
   * @default false
   */
  unsafeNoAuthorization?: boolean
  /**
   * Shows the letters but hides and refuses replay and delete.
   * @default false
   */
  readOnly?: boolean
  /** Who makes a request, for the audit trail (a user name from your session). */
  actor?: (request: Request) => MaybePromise<string | undefined>
  /** Called after every replay and delete made from the board. An error it throws is logged, not answered. */
  onAudit?: (entry: BoardAuditEntry) => void | Promise<void>
  /**
   * Where replays, deletes and the no-authorization warning are logged: one line each, with counts (by outcome),
   * the first and last id and a replay-all run's filter as fields; every id goes to `onAudit`.
   * @default console, the message alone, one line
   */
  logger?: BoardLogger
  /**
   * The board's own origin, as operators' browsers reach it (`https://admin.example.com`: scheme, host and port):
   * replay and delete need a request whose `Origin` is it (or one of `allowedOrigins`). The board never takes its
   * origin from a request's `Host` header, which a page of another site resolving its name to your server (DNS
   * rebinding) sets to its own name; without `origin` or `allowedOrigins`, only a board reached by an address
   * (`http://127.0.0.1:3000`, `http://localhost:3000`, `http://10.0.0.5`) takes that address as its origin, and one
   * reached by a name answers replay and delete 403, saying what to set.
   * @example
   * createBoard({ webhooks, authorize, origin: 'https://admin.example.com' })
   * @default none
   */
  origin?: string
  /**
   * Other origins a state-changing request may come from, besides {@link BoardOptions.origin}: more names the board
   * is reached by. The whole origin is compared, so `http://` is not `https://` and another port is another origin.
   * @default []
   */
  allowedOrigins?: string[]
  /**
   * Most letters one request of "Replay all matching" replays: the page asks batch after batch (showing progress,
   * and can stop), so no request runs long whatever the count.
   * @default 50
   */
  replayBatchSize?: number
}

/** One request as a mount hands it to {@link Board.handle}. */
export interface BoardRequest<Request = unknown> {
  method: string
  /** The path under the mount, starting with `/` (`/` for the page). */
  path: string
  /** Where the board is mounted (`/admin/payhooks`, no trailing slash; `''` at the root). */
  base: string
  query: URLSearchParams
  /** A request header (lower-case name), or undefined. */
  header(name: string): string | undefined
  /**
   * The body's text (state-changing requests only); mounts read at most {@link MAX_BODY_BYTES} and reject a longer
   * one with {@link BodyTooLargeError}, answered 413 after `authorize` and the CSRF checks.
   */
  body(): Promise<string>
  /**
   * Whether the request came over TLS to this process (`https`), for the Origin check; `x-forwarded-proto` from a
   * proxy wins. Mounts set it.
   * @default false
   */
  secure?: boolean
  /** The framework's own request (Express `req`, Koa `ctx`, Hono `c`, Fastify `request`, node's `req`). */
  native: Request
}

/** The board's answer; the mount writes it as is. */
export interface BoardResponse {
  status: number
  headers: Record<string, string>
  body: string | Uint8Array
}

/** An operator console over a receiver's dead letters; serve it with a mount from `@payhooks/board/<framework>`. */
export interface Board<Request = unknown> {
  readonly readOnly: boolean
  /** Answers one request under the mount. Never rejects: failures are answered 500 and logged. */
  handle(request: BoardRequest<Request>): Promise<BoardResponse>
}

/** The largest body a state-changing request may have. */
export const MAX_BODY_BYTES = 64 * 1024

/** A state-changing request's body was longer than {@link MAX_BODY_BYTES}: the board answers 413. */
export class BodyTooLargeError extends Error {
  override name = 'BodyTooLargeError'
  constructor() {
    super(`body over ${MAX_BODY_BYTES} bytes`)
  }
}

/** A letter as the list shows it. */
export type LetterSummary = Pick<DeadLetter, 'eventId' | 'eventType' | 'code' | 'reason' | 'parkCount' | 'status'> & {
  parkedAt: string
  firstParkedAt: string
  replayedAt: string | null
  createdAt: string | null
  size: number
}
