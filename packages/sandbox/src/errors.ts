/**
 * A refused sandbox request or call: the HTTP routes answer it with `status` and
 * `{ error: { message } }`; `sandbox.emit` and `sandbox.advance` throw it.
 *
 * @example
 * try {
 *   await sandbox.advance(60_000)
 * } catch (error) {
 *   if (error instanceof SandboxHttpError && error.status === 409) console.log('not a manual clock')
 * }
 */
export class SandboxHttpError extends Error {
  constructor(
    /** HTTP status of the answer. */
    readonly status: number,
    message: string,
    /**
     * Extra response headers, such as `allow` on a 405.
     * @default {}
     */
    readonly headers: Record<string, string> = {},
  ) {
    super(message)
  }
}
