import type { WebhookResult } from './webhooks.js'

/**
 * Reads a web-standard request's body, or returns `undefined` once it passes `limit` bytes: refused
 * up front from `content-length` when it can, otherwise the stream is cancelled at the limit, so an
 * oversized body is never held in memory. For adapters on fetch-style runtimes.
 *
 * @example
 * const body = await readBody(request, webhooks.maxBodyBytes)
 * if (!body) return toResponse(webhooks.reject(new PayloadTooLargeError(webhooks.maxBodyBytes)))
 */
export async function readBody(request: Request, limit: number): Promise<Uint8Array | undefined> {
  const length = request.headers.get('content-length')
  if (length !== null && Number(length) > limit) return undefined
  if (!request.body) return new Uint8Array(0)
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > limit) {
      await reader.cancel()
      return undefined
    }
    chunks.push(value)
  }
  if (chunks.length === 1) return chunks[0]
  const bytes = new Uint8Array(total)
  let offset = 0
  for (const chunk of chunks) {
    bytes.set(chunk, offset)
    offset += chunk.byteLength
  }
  return bytes
}

/** A web-standard `Response` for a receiver's answer. */
export function toResponse(result: WebhookResult): Response {
  return new Response(result.body, { status: result.status, headers: result.headers })
}
