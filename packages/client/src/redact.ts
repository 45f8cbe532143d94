// Keeps the credentials out of every error the client builds from what a server (or fetch) said.

import { MIN_REDACTABLE_LENGTH, REDACTED } from './redact/constants.js'
import { redactError } from './redact/error.js'
import { base64Forms, secretPattern } from './redact/patterns.js'

export { MIN_REDACTABLE_LENGTH, REDACTED } from './redact/constants.js'
export { redactSecretFields } from './redact/fields.js'
export { MIN_REDACTED_PREFIX } from './redact/patterns.js'

// The patterns of a credential's echoes are in redact/patterns.ts, the copy of an error in redact/error.ts, and
// the redaction of credential-named fields in redact/fields.ts.

/** One credential and the name errors use for it. */
export interface Secret {
  value: string
  /** Such as `the API key`, in the notice of withheld server text. */
  label: string
  /**
   * Credential-shaped (`12|key`, `user:key`): redacted at any length, since the `|` or `:` keeps it from
   * reading as an ordinary word. A bare secret shorter than {@link MIN_REDACTABLE_LENGTH} is not.
   */
  shaped?: boolean
}

export interface Redactor {
  /** Every form of every credential in `text` replaced with `[redacted]`. */
  text(text: string): string
  /** Server text (reason phrase, body) as errors may show it: redacted, or `''` while withheld. */
  serverText(text: string): string
  /** Why server text is withheld from errors, or `undefined` when every credential is long enough to redact. */
  withheld: string | undefined
  /** A copy of an error and its cause chain that holds no credential and no raw server bytes. */
  error(value: unknown): unknown
}

/**
 * Builds the redactor of `secrets`. Longer secrets go first, so `user:key` is redacted as one piece
 * rather than leaving `user:` in front of a redacted key.
 */
export function createRedactor(secrets: Secret[]): Redactor {
  const list = secrets.filter((s) => s.value.length > 0).sort((a, b) => b.value.length - a.value.length)
  const short = list.filter((s) => !s.shaped && s.value.length < MIN_REDACTABLE_LENGTH)
  const withheld =
    short.length > 0
      ? `the service's text is withheld, not shown: ${short.map((s) => s.label).join(' and ')} ${short.length > 1 ? 'are' : 'is'} shorter than ${MIN_REDACTABLE_LENGTH} characters, too short to redact from it safely`
      : undefined
  // A short bare secret stays out of the pattern (server text is withheld instead); its credential-shaped
  // forms (`12|ab`, `user:ab`) stay in, for the local error messages that are still shown.
  const redactable = list.filter((s) => !short.includes(s))
  // Longest first, so that the longest echo at a position is the one replaced.
  const forms = redactable
    .flatMap((s) => [s.value, ...base64Forms(s.value)])
    .sort((a, b) => b.length - a.length)
    .map(secretPattern)
  // Case-insensitive: a server may echo a credential upper-cased; redacting a differently cased copy costs nothing.
  const pattern = forms.length > 0 ? new RegExp(forms.join('|'), 'gi') : undefined
  const text = (value: string) => (pattern ? value.replace(pattern, REDACTED) : value)

  return {
    text,
    serverText: (value) => (withheld ? '' : text(value)),
    withheld,
    error: (value) => redactError(value, text),
  }
}
