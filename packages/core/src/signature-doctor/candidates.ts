import type { SignatureHintCode } from './hints.js'

/** Altered forms of the received body, each with the hint it confirms should it verify. */
export type BodyCandidate = readonly [code: SignatureHintCode, bytes: Uint8Array]

const encoder = new TextEncoder()
const decoder = new TextDecoder()
const LF = 0x0a
const CR = 0x0d

function startsWithBom(bytes: Uint8Array): boolean {
  return bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf
}

function withBom(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(bytes.length + 3)
  out.set([0xef, 0xbb, 0xbf])
  out.set(bytes, 3)
  return out
}

/** CRLF as LF, or `undefined` when there is no CRLF. */
function crlfToLf(bytes: Uint8Array): Uint8Array | undefined {
  const out: number[] = []
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i] === CR && bytes[i + 1] === LF) continue
    out.push(bytes[i] as number)
  }
  return out.length < bytes.length ? Uint8Array.from(out) : undefined
}

/** LF as CRLF, or `undefined` when there is no LF. */
function lfToCrlf(bytes: Uint8Array): Uint8Array | undefined {
  const out: number[] = []
  for (const byte of bytes) {
    if (byte === LF) out.push(CR)
    out.push(byte)
  }
  return out.length > bytes.length ? Uint8Array.from(out) : undefined
}

/** Each byte as the character of that code (latin-1). */
const latin1Decode = (bytes: Uint8Array): string => {
  let text = ''
  for (const byte of bytes) text += String.fromCharCode(byte)
  return text
}

/** Each character as one byte, or `undefined` when one is beyond U+00FF. */
function latin1Encode(text: string): Uint8Array | undefined {
  const out = new Uint8Array(text.length)
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code > 0xff) return undefined
    out[i] = code
  }
  return out
}

const hasNonAscii = (bytes: Uint8Array) => bytes.some((byte) => byte > 0x7f)

/**
 * The body with one byte-level alteration undone: a byte order mark dropped or added, trailing newlines dropped,
 * line endings converted, and (when it holds non-ASCII bytes) UTF-8 and latin-1 swapped either way.
 */
export function byteCandidates(bytes: Uint8Array): BodyCandidate[] {
  const candidates: BodyCandidate[] = []
  candidates.push(['byte_order_mark', startsWithBom(bytes) ? bytes.subarray(3) : withBom(bytes)])
  let end = bytes.length
  while (end > 0 && (bytes[end - 1] === LF || bytes[end - 1] === CR)) end--
  if (end < bytes.length) candidates.push(['trailing_newline', bytes.subarray(0, end)])
  const converted = bytes.includes(LF) ? (crlfToLf(bytes) ?? lfToCrlf(bytes)) : undefined
  if (converted) candidates.push(['line_endings', converted])
  if (hasNonAscii(bytes)) {
    // UTF-8 bytes read as latin-1 and written as UTF-8 (é, C3 A9, became C3 83 C2 A9): undone by the reverse.
    const doubled = latin1Encode(decoder.decode(bytes))
    if (doubled) candidates.push(['body_reencoded', doubled])
    // UTF-8 text written as latin-1 (é became E9).
    candidates.push(['body_reencoded', encoder.encode(latin1Decode(bytes))])
  }
  return candidates
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys)
  if (typeof value !== 'object' || value === null) return value
  const sorted: Record<string, unknown> = {}
  for (const key of Object.keys(value).sort()) sorted[key] = sortKeys((value as Record<string, unknown>)[key])
  return sorted
}

/** JSON with `", "` and `": "` between items, as Python's `json.dumps` writes it. */
function spaced(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(spaced).join(', ')}]`
  if (typeof value !== 'object' || value === null) return JSON.stringify(value)
  const entries = Object.entries(value).map(([key, item]) => `${JSON.stringify(key)}: ${spaced(item)}`)
  return `{${entries.join(', ')}}`
}

/** Every character beyond ASCII as a `\uXXXX` escape, as ASCII-only JSON writers do. */
const asciiEscaped = (text: string) =>
  text.replace(/[\u0080-\uffff]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`)

/**
 * The same JSON written the ways serializers commonly write it: compact, spaced, indented by 2 and 4, each in the
 * received key order and sorted, each with and without `\u` escapes; those differing from the body and each other.
 * Empty when the body is not JSON.
 */
export function jsonCandidates(bytes: Uint8Array): Uint8Array[] {
  const text = decoder.decode(bytes)
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return []
  }
  const forms = new Set<string>()
  const compact = JSON.stringify(value)
  // Escaping changes nothing when the JSON holds no character beyond ASCII: skip it then (the usual case).
  const beyondAscii = /[\u0080-\uffff]/.test(compact)
  for (const ordered of [value, sortKeys(value)]) {
    for (const form of [
      ordered === value ? compact : JSON.stringify(ordered),
      spaced(ordered),
      JSON.stringify(ordered, null, 2),
      JSON.stringify(ordered, null, 4),
    ]) {
      forms.add(form)
      if (beyondAscii) forms.add(asciiEscaped(form))
    }
  }
  forms.delete(text)
  return [...forms].map((form) => encoder.encode(form))
}
