import type { Readable } from 'node:stream'
import { IncompleteBodyError, PayloadTooLargeError } from '../errors/index.js'

const EMPTY = Buffer.alloc(0)

type OnBody = ((body: Uint8Array) => unknown) | null | undefined
type OnError = ((error: unknown) => unknown) | null | undefined

/**
 * A Node request body being read, delivered by callback: a thenable whose `then` callbacks run as soon as the
 * stream ends, with no promise made and no microtask hop (a `receive` that gets it as `body` waits on it like on
 * a promise). Holds at most `limit` bytes: past the limit it stops reading and fails with `PayloadTooLargeError`;
 * a stream that fails or closes first fails with `IncompleteBodyError`; once {@link NodeBody.stop} was called it
 * delivers what arrived so far. Settles once. Internal to the Node adapters: `then` returns nothing to chain on.
 */
export class NodeBody {
  readonly #stream: Readable
  readonly #limit: number
  #chunks: Buffer[] = []
  #total = 0
  /** 0 while reading, 1 once the body is in (or stopped), 2 once failed. */
  #state: 0 | 1 | 2 = 0
  /** The bytes once in, or why there are none. */
  #result: unknown = undefined
  #onBody: OnBody = undefined
  #onError: OnError = undefined
  /** 'end' came: the listeners stay (removing 'data' costs Readable a nextTick per request), and do nothing more. */
  #ended = false

  constructor(stream: Readable, limit: number) {
    this.#stream = stream
    this.#limit = limit
    stream.on('data', this.#data)
    stream.on('end', this.#end)
    stream.on('error', this.#fail)
    stream.on('close', this.#close)
  }

  /** Calls `onBody` with the bytes, or `onError` with why there are none: at once if that is known already. */
  // biome-ignore lint/suspicious/noThenProperty: a thenable on purpose: receive() waits on it as on a promise
  then(onBody?: OnBody, onError?: OnError): void {
    if (this.#state === 1) onBody?.(this.#result as Uint8Array)
    else if (this.#state === 2) onError?.(this.#result)
    else if (this.#onBody === undefined && this.#onError === undefined) {
      this.#onBody = onBody ?? null
      this.#onError = onError ?? null
    } else {
      // A second waiter (rare): both are called.
      const [firstBody, firstError] = [this.#onBody, this.#onError]
      this.#onBody = (body) => {
        firstBody?.(body)
        onBody?.(body)
      }
      this.#onError = (error) => {
        firstError?.(error)
        onError?.(error)
      }
    }
  }

  /** Stops reading: the listeners go and the stream is paused, so the socket reads no more. */
  readonly stop = (): void => {
    this.#halt()
    this.#deliver(EMPTY)
  }

  readonly #data = (chunk: Buffer) => {
    this.#total += chunk.byteLength
    if (this.#total > this.#limit) {
      this.#halt()
      this.#failWith(new PayloadTooLargeError(this.#limit))
    } else this.#chunks.push(chunk)
  }

  readonly #end = () => {
    this.#ended = true
    const chunks = this.#chunks
    this.#deliver(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, this.#total))
  }

  readonly #fail = (error: Error) => {
    if (this.#ended) return
    this.#detach()
    this.#failWith(new IncompleteBodyError(error))
  }

  /** A 'close' before 'end' means the body never ended. */
  readonly #close = () => {
    if (this.#ended) return
    this.#detach()
    this.#failWith(new IncompleteBodyError(new Error('connection closed before the body ended')))
  }

  #detach() {
    const stream = this.#stream
    stream.off('data', this.#data)
    stream.off('end', this.#end)
    stream.off('error', this.#fail)
    stream.off('close', this.#close)
  }

  #halt() {
    this.#detach()
    this.#stream.pause()
  }

  #deliver(body: Uint8Array) {
    this.#settle(1, body)
  }

  #failWith(error: unknown) {
    this.#settle(2, error)
  }

  #settle(state: 1 | 2, result: unknown) {
    if (this.#state !== 0) return
    this.#state = state
    this.#result = result
    this.#chunks = []
    const callback = state === 1 ? this.#onBody : this.#onError
    this.#onBody = this.#onError = undefined
    callback?.(result as Uint8Array)
  }
}
