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
export function secretPattern(secret: string): string {
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
export function base64Forms(secret: string): string[] {
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
