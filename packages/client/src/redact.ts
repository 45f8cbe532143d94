// Keeps the credentials out of every error the client builds from what a server (or fetch) said.

/** What replaces a credential. */
export const REDACTED = '[redacted]'

/**
 * Shortest secret that is redacted wherever it appears. A shorter one (a 2-character API key) cannot
 * be told apart from ordinary words, so every occurrence could not be removed without mangling the
 * text, and redacting it only where it looks like a credential would leak a lone echo of it; server
 * text is then withheld from errors altogether.
 */
export const MIN_REDACTABLE_LENGTH = 8

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

const hex = (n: number) => {
  const digits = n.toString(16).padStart(2, '0')
  return [...digits].map((d) => (/[a-f]/.test(d) ? `[${d}${d.toUpperCase()}]` : d)).join('')
}

const NAMED_ENTITIES: Record<string, string> = { '&': 'amp', '<': 'lt', '>': 'gt', '"': 'quot', "'": 'apos' }

/**
 * Every way one character of a credential shows up in text a server wrote: as is, JSON-escaped
 * (`\/`, `\"`, `\\`, `\u007c`, also escaped twice), URL-encoded (`%7C`, `%7c`, `%257C`), form-decoded
 * (`+` read as a space) and as an HTML entity (`&#124;`, `&#x7c;`, `&amp;`).
 */
function charPattern(char: string): string {
  const code = char.charCodeAt(0)
  const forms = [
    `\\\\*${char.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&')}`,
    `\\\\+u00${hex(code)}`,
    `%(?:25)*${hex(code)}`,
    `&#0*${code};`,
    `&#[xX]0*${hex(code)};`,
  ]
  if (NAMED_ENTITIES[char]) forms.push(`&${NAMED_ENTITIES[char]};`)
  if (char === '+') forms.push(' ')
  return `(?:${forms.join('|')})`
}

function secretPattern(secret: string): string {
  return [...secret].map(charPattern).join('')
}

const MAX_CAUSE_DEPTH = 5
/** Fields of Node's and undici's errors that describe the local failure (`ECONNREFUSED 127.0.0.1:4010`). */
const ERROR_FIELDS = ['code', 'errno', 'syscall', 'address', 'port'] as const
const BUILT_IN_ERRORS = [TypeError, RangeError, SyntaxError, ReferenceError, EvalError, URIError] as const

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
  const pattern =
    redactable.length > 0 ? new RegExp(redactable.map((s) => secretPattern(s.value)).join('|'), 'g') : undefined
  const text = (value: string) => (pattern ? value.replace(pattern, REDACTED) : value)

  const error = (value: unknown, depth = 0): unknown => {
    if (typeof value === 'string') return text(value)
    if (typeof value !== 'object' || value === null) return value
    if (!(value instanceof Error) || depth >= MAX_CAUSE_DEPTH) return `[${typeof value} withheld]`
    const Kind = BUILT_IN_ERRORS.find((kind) => value instanceof kind) ?? Error
    const copy = new Kind(text(value.message)) as Error & Record<string, unknown>
    if (copy.name !== value.name) {
      Object.defineProperty(copy, 'name', { value: text(String(value.name)), configurable: true, writable: true })
    }
    copy.stack = typeof value.stack === 'string' ? text(value.stack) : copy.stack
    const source = value as unknown as Record<string, unknown>
    // Other fields (undici's parser error keeps the raw bytes it choked on in `data`) are dropped.
    for (const field of ERROR_FIELDS) {
      const fieldValue = source[field]
      if (typeof fieldValue === 'string') copy[field] = text(fieldValue)
      else if (typeof fieldValue === 'number') copy[field] = fieldValue
    }
    if ('cause' in value && value.cause !== undefined) {
      Object.defineProperty(copy, 'cause', {
        value: error(value.cause, depth + 1),
        configurable: true,
        writable: true,
        enumerable: false,
      })
    }
    return copy
  }

  return {
    text,
    serverText: (value) => (withheld ? '' : text(value)),
    withheld,
    error: (value) => error(value),
  }
}
