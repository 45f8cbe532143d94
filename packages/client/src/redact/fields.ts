import { MIN_REDACTABLE_LENGTH, REDACTED } from './constants.js'

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
