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

/** Length from which a cut echo of a secret (its first characters only, as a log or a message may show it) is redacted. */
export const MIN_REDACTED_PREFIX = 16

/** `secret` in every form of {@link charPattern}, also cut after its first {@link MIN_REDACTED_PREFIX} characters. */
function secretPattern(secret: string): string {
  const chars = [...secret].map(charPattern)
  if (chars.length <= MIN_REDACTED_PREFIX) return chars.join('')
  // Each character after the prefix optional, in order: the longest prefix present is the one matched.
  let rest = ''
  for (let i = chars.length - 1; i >= MIN_REDACTED_PREFIX; i--) rest = `(?:${chars[i]}${rest})?`
  return chars.slice(0, MIN_REDACTED_PREFIX).join('') + rest
}

const BASE64_MIN_LENGTH = 8

const base64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes))

/**
 * The base 64 forms of `secret` (standard and URL-safe): the whole encoding with its padding, and, for text
 * where it sits at any of the three byte offsets of a longer encoded string (a whole `Authorization` header
 * encoded), the characters that depend on its bytes alone.
 */
function base64Forms(secret: string): string[] {
  const bytes = new TextEncoder().encode(secret)
  const forms = [base64(bytes)]
  for (const offset of [0, 1, 2]) {
    const shifted = new Uint8Array(offset + bytes.length)
    shifted.set(bytes, offset)
    const whole = shifted.length - (shifted.length % 3)
    const encoded = base64(shifted.subarray(0, whole))
    const core = encoded.slice(offset === 0 ? 0 : offset + 1)
    if (core.length >= BASE64_MIN_LENGTH) forms.push(core)
  }
  const urlSafe = forms.map((form) => form.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, ''))
  return [...new Set([...forms, ...urlSafe])]
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
  // Longest first, so that the longest echo at a position is the one replaced.
  const forms = redactable
    .flatMap((s) => [s.value, ...base64Forms(s.value)])
    .sort((a, b) => b.length - a.length)
    .map(secretPattern)
  // Case-insensitive: a server may echo a credential upper-cased; redacting a differently cased copy costs nothing.
  const pattern = forms.length > 0 ? new RegExp(forms.join('|'), 'gi') : undefined
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

/**
 * Names of fields whose value is a credential, whatever its type: `signature_secret`, `token`, `access_token`,
 * `client_secret`, `password`, `api_key`.
 */
const SECRET_FIELD = /secret|token|passw(?:or)?d|api_?key/i
/** Values found whose echoes elsewhere in the text are redacted too, at most. */
const MAX_ECHOED_VALUES = 32
/** Deeper JSON than this is withheld rather than walked. */
const MAX_FIELD_DEPTH = 64
/** A field name, bare or quoted (quotes escaped any number of times), before `:` or `=`. */
const FIELD = /(?<![\w$.-])((?:\\*["'])?)((?:[\w$.-]|\\u[0-9a-fA-F]{4}){1,100})\1\s*[:=]\s*/g
/** An element that holds a credential (`<token>…</token>`). */
const SECRET_ELEMENT = /<\s*([\w:.-]{1,100})[^<>]{0,200}>/g

const decodeName = (name: string) =>
  name.replace(/\\u([0-9a-fA-F]{4})/g, (_, code: string) => String.fromCharCode(Number.parseInt(code, 16)))

/** End of the value that starts at `start`: a string closed by `quote`, a bracketed value, or a bare word. */
function valueEnd(text: string, start: number): { end: number; quoted: string } {
  const quote = /^\\*["']/.exec(text.slice(start, start + 16))?.[0]
  if (quote) {
    const escapes = quote.length - 1
    for (let i = start + quote.length; i < text.length; i++) {
      if (escapes === 0 && text[i] === '\\') i++
      else if (text.startsWith(quote, i) && (escapes === 0 || text[i - 1] !== '\\')) {
        return { end: i + quote.length, quoted: quote }
      }
    }
    return { end: text.length, quoted: quote }
  }
  const open = text[start]
  if (open === '{' || open === '[') {
    let depth = 0
    let inString = false
    for (let i = start; i < text.length; i++) {
      const char = text[i]
      if (inString) {
        if (char === '\\') i++
        else if (char === '"') inString = false
      } else if (char === '"') inString = true
      else if (char === '{' || char === '[') depth++
      else if ((char === '}' || char === ']') && --depth === 0) return { end: i + 1, quoted: '' }
    }
    return { end: text.length, quoted: '' }
  }
  const bare = /[\s,;&}\])<>"']/.exec(text.slice(start))
  return { end: bare ? start + bare.index : text.length, quoted: '' }
}

/**
 * `text` with the value after each match of `pattern` replaced when `isSecret(match)`; `span` says where the
 * value ends and which quotes around it are kept. Each value found goes to `found`.
 */
function replaceValues(
  text: string,
  pattern: RegExp,
  isSecret: (match: RegExpExecArray) => boolean,
  span: (start: number) => { end: number; quoted: string },
  found: string[],
): string {
  let out = ''
  let from = 0
  for (const match of text.matchAll(pattern)) {
    if (match.index < from || !isSecret(match)) continue
    const start = match.index + match[0].length
    const { end, quoted } = span(start)
    if (end === start) continue
    const closed = quoted !== '' && end - start >= 2 * quoted.length && text.endsWith(quoted, end)
    found.push(text.slice(start + quoted.length, closed ? end - quoted.length : end))
    out += `${text.slice(from, start)}${quoted}${REDACTED}${closed ? quoted : ''}`
    from = end
  }
  return out + text.slice(from)
}

/** `text` with the value of every credential-named field or element replaced; each value found goes to `found`. */
function redactFieldsInText(text: string, found: string[]): string {
  const fields = replaceValues(
    text,
    FIELD,
    (match) => SECRET_FIELD.test(decodeName(match[2] ?? '')),
    (start) => valueEnd(text, start),
    found,
  )
  return replaceValues(
    fields,
    SECRET_ELEMENT,
    (match) => SECRET_FIELD.test(match[1] ?? ''),
    (start) => {
      const close = fields.indexOf('<', start)
      return { end: close < 0 ? fields.length : close, quoted: '' }
    },
    found,
  )
}

function collectStrings(value: unknown, found: string[], depth = 0): void {
  if (typeof value === 'string' || typeof value === 'number') found.push(String(value))
  else if (typeof value === 'object' && value !== null && depth < MAX_FIELD_DEPTH) {
    for (const item of Object.values(value)) collectStrings(item, found, depth + 1)
  }
}

/**
 * `text` (an answer body an error keeps) with the value of every credential-named field replaced with
 * `[redacted]` (`signature_secret`, `token`, `client_secret`, `password`, `api_key`…), at any depth, whatever
 * the value's type, also in JSON text nested in a string, in text that is not JSON (cut off, form-encoded,
 * `key: value` lines, XML elements), and wherever the values found (the first 32) are copied as is elsewhere in `text`. JSON that
 * needed a change is written again with `JSON.stringify`; other text keeps its bytes around the values.
 */
export function redactSecretFields(text: string): string {
  const found: string[] = []
  let changed = false
  const walk = (value: unknown, depth: number): unknown => {
    if (typeof value === 'string') {
      const redacted = redactFieldsInText(value, found)
      changed ||= redacted !== value
      return redacted
    }
    if (typeof value !== 'object' || value === null) return value
    if (depth >= MAX_FIELD_DEPTH) {
      changed = true
      return '[nested too deep, withheld]'
    }
    if (Array.isArray(value)) return value.map((item) => walk(item, depth + 1))
    return Object.fromEntries(
      Object.entries(value).map(([name, item]) => {
        // null and booleans say whether there is one, and are no secret.
        if (!SECRET_FIELD.test(name) || item === null || typeof item === 'boolean') return [name, walk(item, depth + 1)]
        collectStrings(item, found)
        changed = true
        return [name, REDACTED]
      }),
    )
  }
  let result: string
  try {
    const redacted = walk(JSON.parse(text), 0)
    result = changed ? JSON.stringify(redacted) : text
  } catch {
    result = redactFieldsInText(text, found)
  }
  const echoes = [...new Set(found)]
    .filter((value) => value.length >= MIN_REDACTABLE_LENGTH && value !== REDACTED)
    .slice(0, MAX_ECHOED_VALUES)
  // Exact copies only: the escaped and encoded forms of createRedactor cost seconds on a long list of secrets.
  return echoes.sort((a, b) => b.length - a.length).reduce((text, value) => text.split(value).join(REDACTED), result)
}
