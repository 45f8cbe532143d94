import type { SignatureHintCode } from './hints.js'

/** Altered forms of the received body, each with the hint it confirms should it verify. */
export type BodyCandidate = readonly [code: SignatureHintCode, bytes: Uint8Array]

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
  const out = new Uint8Array(bytes.length)
  let length = 0
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i] === CR && bytes[i + 1] === LF) continue
    out[length++] = bytes[i] as number
  }
  return length < bytes.length ? out.subarray(0, length) : undefined
}

/** LF as CRLF, or `undefined` when there is no LF. */
function lfToCrlf(bytes: Uint8Array): Uint8Array | undefined {
  const out = new Uint8Array(bytes.length * 2)
  let length = 0
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i] as number
    if (byte === LF) out[length++] = CR
    out[length++] = byte
  }
  return length > bytes.length ? out.subarray(0, length) : undefined
}

/** Each byte read as latin-1 and written as UTF-8 (E9 became C3 A9). */
function latin1ToUtf8(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(bytes.length * 2)
  let length = 0
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i] as number
    if (byte < 0x80) out[length++] = byte
    else {
      out[length++] = 0xc0 | (byte >> 6)
      out[length++] = 0x80 | (byte & 0x3f)
    }
  }
  return out.subarray(0, length)
}

/**
 * UTF-8 text whose characters are all below U+0100 (after a byte order mark, dropped as a decoder does), each as one
 * byte (C3 A9 became E9); `undefined` when one is beyond, or the bytes are not UTF-8.
 */
function utf8ToLatin1(bytes: Uint8Array): Uint8Array | undefined {
  const out = new Uint8Array(bytes.length)
  let length = 0
  for (let i = startsWithBom(bytes) ? 3 : 0; i < bytes.length; i++) {
    const byte = bytes[i] as number
    if (byte < 0x80) out[length++] = byte
    else if ((byte === 0xc2 || byte === 0xc3) && i + 1 < bytes.length && ((bytes[i + 1] as number) & 0xc0) === 0x80) {
      out[length++] = ((byte & 0x03) << 6) | ((bytes[++i] as number) & 0x3f)
    } else return undefined
  }
  return out.subarray(0, length)
}

function hasNonAscii(bytes: Uint8Array): boolean {
  for (let i = 0; i < bytes.length; i++) if ((bytes[i] as number) > 0x7f) return true
  return false
}

/**
 * The body with one byte-level alteration undone: a byte order mark dropped or added, trailing newlines dropped,
 * line endings converted, and (when it holds non-ASCII bytes) UTF-8 and latin-1 swapped either way. Each is made in
 * one pass over the bytes and at most twice as long as the body.
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
    const doubled = utf8ToLatin1(bytes)
    if (doubled) candidates.push(['body_reencoded', doubled])
    // UTF-8 text written as latin-1 (é became E9).
    candidates.push(['body_reencoded', latin1ToUtf8(bytes)])
  }
  return candidates
}
