/** What a failed signature check most likely came from, as {@link SignatureHint.code}. */
export type SignatureHintCode =
  | 'body_reserialized'
  | 'trailing_newline'
  | 'line_endings'
  | 'byte_order_mark'
  | 'body_reencoded'
  | 'header_prefix'
  | 'secret_whitespace'
  | 'unheld_secret'
  | 'wrong_secret_or_bytes'
  | 'malformed_header'
  | 'not_diagnosed'

/**
 * The signature doctor's diagnosis of a failed check: a fixed code and a fixed sentence for it. Never the secret,
 * the signature or the body. Every code but `wrong_secret_or_bytes`, `malformed_header` and `not_diagnosed` was
 * confirmed: the altered bytes, header or secret it names verify.
 */
export interface SignatureHint {
  readonly code: SignatureHintCode
  readonly message: string
  /** For `unheld_secret` found among the `otherSecrets` given to {@link diagnoseSignature}: which of them. */
  readonly otherSecretIndex?: number
}

const MESSAGES: Record<SignatureHintCode, string> = {
  body_reserialized:
    'the body was re-serialized (whitespace, indentation, key order or \\u escapes changed): a re-formatted copy of the same JSON verifies. Verify the exact bytes received, before any body parser (see the quick start of your framework in the documentation, docs/quick-start/: an app that already has express.json() passes keepRawBody).',
  trailing_newline:
    'a trailing newline was added to the body: the body without it verifies. Something between the sender and the receiver appends it (a proxy, a logging middleware, `echo` in a test script).',
  line_endings:
    'line endings were converted (LF and CRLF): the body with its line endings converted back verifies. Read the body as binary, not as text.',
  byte_order_mark:
    'a UTF-8 byte order mark (EF BB BF) was added or dropped at the start of the body: the body with it toggled verifies. Pass the bytes as received, not text decoded and encoded again.',
  body_reencoded:
    'non-ASCII bytes of the body were decoded with one encoding and encoded with another (latin-1 and UTF-8): the body re-encoded back verifies. Read the body as bytes, never as text in a guessed charset.',
  header_prefix:
    'the service-hmac-sha256 header carries something around its 64 hex characters (a prefix such as sha256=, quotes or spaces): the bare hex verifies. The service sends the bare digest; whatever adds the rest sits in between.',
  secret_whitespace:
    'the secret has whitespace around it (a newline from a .env file?): the trimmed secret verifies. Trim the secret where it is loaded.',
  unheld_secret:
    'the body was signed with a secret this receiver does not hold: the payhooks sandbox test secret, used for a test message to a url with no subscription. Subscribe that url, or have the receiver accept the test secret while testing.',
  wrong_secret_or_bytes:
    'no secret this receiver holds verifies these bytes, nor any altered form the doctor tries (re-serialized JSON, newlines, BOM, encoding, header prefix, trimmed secret). Either it was signed with another secret (another subscription, or one rotated since: the header names no key, so this cannot be told apart) or the bytes changed in another way.',
  malformed_header:
    'the service-hmac-sha256 header is not 64 hex characters, even with a prefix, quotes or spaces removed: it is not a signature the service sends.',
  not_diagnosed:
    'not diagnosed: the body is larger than the doctor examines (64 KiB; JSON is re-formatted up to 4 KiB, 32 deep, 256 values), or failed checks used up the time the doctor may spend.',
}

/** `unheld_secret` for one of the other secrets the caller gave the doctor. */
export function otherSecretHint(index: number): SignatureHint {
  return Object.freeze({
    code: 'unheld_secret',
    message: `the body was signed with other secret ${index} given to the doctor, a secret the receiver does not hold.`,
    otherSecretIndex: index,
  })
}

/** The hint of `code`, one frozen object per code. */
export const HINTS: Readonly<Record<SignatureHintCode, SignatureHint>> = Object.freeze(
  Object.fromEntries(
    Object.entries(MESSAGES).map(([code, message]) => [code, Object.freeze({ code, message })]),
  ) as Record<SignatureHintCode, SignatureHint>,
)
