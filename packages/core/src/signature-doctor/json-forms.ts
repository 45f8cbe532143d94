// Re-formatted copies of a JSON body, at a cost bounded by the body's length whatever its shape: a pre-scan of the
// bytes decides whether the body is parsed at all, and each form is written from the compact bytes in one pass
// once its length, counted first, is known to fit.

/** JSON bodies longer than this are not re-formatted: the service's messages are a few hundred bytes (spec 2.2). */
export const JSON_MAX_BYTES = 4096

/** JSON nested deeper than this is not re-formatted: the service's messages nest three deep (spec 2.2). */
export const JSON_MAX_DEPTH = 32

/**
 * JSON with more values than this (counted as its brackets, commas and colons) is not re-formatted: parsing,
 * sorting and writing objects of thousands of keys costs far more than their bytes. The service's messages hold a
 * few dozen.
 */
export const JSON_MAX_VALUES = 256

/** The longest form written for a body of `length` bytes: indentation, spaces and `\u` escapes make it longer. */
export const jsonFormLimit = (length: number) => 3 * length + 4096

/** The most bytes written in all forms of a body of `length` bytes together. */
export const jsonFormsLimit = (length: number) => 8 * length + 16_384

const encoder = new TextEncoder()
const decoder = new TextDecoder()
const QUOTE = 0x22
const BACKSLASH = 0x5c
const SPACE = 0x20
const LF = 0x0a
const COMMA = 0x2c
const COLON = 0x3a
const OPEN_ARRAY = 0x5b
const OPEN_OBJECT = 0x7b
const CLOSE_ARRAY = 0x5d
const CLOSE_OBJECT = 0x7d

/** Index of the quote closing the string whose opening quote is at `at`. */
function stringEnd(bytes: Uint8Array, at: number): number {
  let i = at + 1
  while (i < bytes.length && bytes[i] !== QUOTE) i += bytes[i] === BACKSLASH ? 2 : 1
  return i
}

/**
 * Whether the bytes nest deeper than {@link JSON_MAX_DEPTH} or hold more than {@link JSON_MAX_VALUES} values, in one
 * pass following JSON's strings (bytes that are not JSON are counted too: JSON.parse refuses them afterwards).
 */
function tooComplex(bytes: Uint8Array): boolean {
  let depth = 0
  let values = 0
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]
    if (byte === QUOTE) i = stringEnd(bytes, i)
    else if (byte === OPEN_ARRAY || byte === OPEN_OBJECT) {
      if (++depth > JSON_MAX_DEPTH || ++values > JSON_MAX_VALUES) return true
    } else if (byte === CLOSE_ARRAY || byte === CLOSE_OBJECT) depth--
    else if ((byte === COMMA || byte === COLON) && ++values > JSON_MAX_VALUES) return true
  }
  return false
}

/** A line break and `spaces` spaces at `at` (when writing), and where the next byte goes. */
function lineBreak(out: Uint8Array | undefined, at: number, spaces: number): number {
  if (out) {
    out[at] = LF
    for (let k = 1; k <= spaces; k++) out[at + k] = SPACE
  }
  return at + 1 + spaces
}

/**
 * Compact JSON bytes laid out with `indent` spaces per level as `JSON.stringify(value, null, indent)` does, or with
 * `indent` 0 spaced (`", "` and `": "`, as Python's `json.dumps`): written into `out` when given; the length.
 */
function layout(flat: Uint8Array, indent: number, out: Uint8Array | undefined): number {
  const length = flat.length
  let at = 0
  let depth = 0
  for (let i = 0; i < length; i++) {
    const byte = flat[i] as number
    if (byte === QUOTE) {
      // Copied byte by byte: a subarray per string would cost more than the copy.
      const end = stringEnd(flat, i)
      if (out) for (let k = i; k <= end; k++) out[at + k - i] = flat[k] as number
      at += end + 1 - i
      i = end
    } else if (byte === OPEN_ARRAY || byte === OPEN_OBJECT) {
      // Reading past the end makes V8 take a slow path: compare only within the bytes.
      const next = i + 1 < length ? (flat[i + 1] as number) : 0
      if (out) out[at] = byte
      at++
      if (next !== CLOSE_ARRAY && next !== CLOSE_OBJECT && indent > 0) at = lineBreak(out, at, ++depth * indent)
      else if (next !== CLOSE_ARRAY && next !== CLOSE_OBJECT) depth++
    } else if (byte === CLOSE_ARRAY || byte === CLOSE_OBJECT) {
      const previous = i > 0 ? (flat[i - 1] as number) : 0
      if (previous !== OPEN_ARRAY && previous !== OPEN_OBJECT) {
        depth--
        if (indent > 0) at = lineBreak(out, at, depth * indent)
      }
      if (out) out[at] = byte
      at++
    } else {
      if (out) out[at] = byte
      at++
      if (byte === COMMA && indent > 0) at = lineBreak(out, at, depth * indent)
      else if (byte === COMMA || byte === COLON) {
        if (out) out[at] = SPACE
        at++
      }
    }
  }
  return at
}

/** {@link layout}'s form, or `undefined` when longer than `limit`: counted first, then written. */
function reformat(flat: Uint8Array, indent: number, limit: number): Uint8Array | undefined {
  const length = layout(flat, indent, undefined)
  if (length > limit) return undefined
  const out = new Uint8Array(length)
  layout(flat, indent, out)
  return out
}

const HEX = encoder.encode('0123456789abcdef')

/** UTF-8 bytes with every character beyond ASCII as `\uXXXX` (two for a surrogate pair), as ASCII-only writers do. */
function asciiEscaped(bytes: Uint8Array, growth: number): Uint8Array {
  const out = new Uint8Array(bytes.length + growth)
  let at = 0
  const writeEscape = (unit: number) => {
    out[at++] = BACKSLASH
    out[at++] = 0x75
    for (let shift = 12; shift >= 0; shift -= 4) out[at++] = HEX[(unit >> shift) & 15] as number
  }
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i] as number
    if (byte < 0x80) {
      out[at++] = byte
      continue
    }
    const size = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : 2
    let code = byte & (0xff >> (size + 1))
    for (let k = 1; k < size; k++) code = (code << 6) | ((bytes[i + k] as number) & 0x3f)
    i += size - 1
    if (code > 0xffff) {
      writeEscape(0xd800 + ((code - 0x10000) >> 10))
      writeEscape(0xdc00 + ((code - 0x10000) & 0x3ff))
    } else writeEscape(code)
  }
  return out
}

/** How much longer {@link asciiEscaped} makes `bytes` (well-formed UTF-8, as `TextEncoder` writes). */
function escapeGrowth(bytes: Uint8Array): number {
  let growth = 0
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i] as number
    // Lead bytes only: 2 bytes become 6, 3 become 6, 4 become 12.
    if (byte >= 0xf0) growth += 8
    else if (byte >= 0xe0) growth += 3
    else if (byte >= 0xc0) growth += 4
  }
  return growth
}

/** Whether some object in `value` has keys out of order. Depth is bounded by the pre-scan. */
function unsorted(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false
  if (Array.isArray(value)) return value.some(unsorted)
  const keys = Object.keys(value)
  for (let i = 1; i < keys.length; i++) if ((keys[i - 1] as string) > (keys[i] as string)) return true
  return Object.values(value).some(unsorted)
}

/** Keys sorted at every level, as `json.dumps(sort_keys=True)` writes them. Depth is bounded by the pre-scan. */
function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys)
  if (typeof value !== 'object' || value === null) return value
  // No prototype: a `__proto__` key stays a key.
  const sorted: Record<string, unknown> = Object.create(null)
  for (const key of Object.keys(value).sort()) sorted[key] = sortKeys((value as Record<string, unknown>)[key])
  return sorted
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/** The forms {@link jsonForms} wrote, and whether any it would have tried was left out. */
export interface JsonForms {
  forms: Uint8Array[]
  /** False when the body may be JSON the doctor does not re-format (too long, deep or large) or a form was too long. */
  complete: boolean
}

/**
 * The same JSON written the ways serializers commonly write it: compact, spaced, indented by 2 and 4, each in the
 * received key order and sorted, each with and without `\u` escapes; those differing from the body and each other.
 * No form when the body is not JSON. Each form's length is counted before it is written: each is at most
 * {@link jsonFormLimit} long, all together at most {@link jsonFormsLimit}. Bodies over {@link JSON_MAX_BYTES},
 * nested over {@link JSON_MAX_DEPTH} or holding over {@link JSON_MAX_VALUES} values are not parsed.
 */
export function jsonForms(bytes: Uint8Array): JsonForms {
  if (bytes.length > JSON_MAX_BYTES || tooComplex(bytes)) return { forms: [], complete: false }
  let value: unknown
  try {
    value = JSON.parse(decoder.decode(bytes))
  } catch {
    return { forms: [], complete: true }
  }
  const limit = jsonFormLimit(bytes.length)
  let left = jsonFormsLimit(bytes.length)
  const forms: Uint8Array[] = []
  let complete = true
  const keep = (form: Uint8Array | undefined) => {
    if (!form || form.length > limit || form.length > left) {
      complete = false
      return undefined
    }
    left -= form.length
    if (!sameBytes(form, bytes) && !forms.some((other) => sameBytes(other, form))) forms.push(form)
    return form
  }
  for (const ordered of unsorted(value) ? [value, sortKeys(value)] : [value]) {
    const flat = keep(encoder.encode(JSON.stringify(ordered)))
    if (!flat) break
    // Escaping changes nothing when the JSON holds no character beyond ASCII (the usual case).
    const growth = escapeGrowth(flat)
    for (const form of [flat, reformat(flat, 0, limit), reformat(flat, 2, limit), reformat(flat, 4, limit)]) {
      if (form !== flat) keep(form)
      if (form && growth > 0) keep(form.length + growth <= limit ? asciiEscaped(form, growth) : undefined)
    }
  }
  return { forms, complete }
}
