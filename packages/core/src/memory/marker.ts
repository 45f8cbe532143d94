// The done markers of `memoryStore` hold what they need in as little heap as V8 allows: a marker without a body
// digest is its expiry alone, a small integer kept in the Map itself; one with a digest is a single flat one-byte
// string: a tag, the expiry in four bytes, then the digest (32 hex characters packed into 16 bytes). A Map value of
// an object with both, or a second Map, cost about twice as much per marker.

/** Expiry in whole seconds from the store's start, and the body digest if the claim had one. */
export type Marker = number | string

const PACKED = 0x68 // 'h': 32 lower-case hex characters packed into 16 bytes
const RAW = 0x72 // 'r': any other digest, as its own characters
const HEADER = 5
const codes: number[] = []

function hexValue(code: number): number {
  if (code >= 48 && code <= 57) return code - 48
  if (code >= 97 && code <= 102) return code - 87
  return -1
}

/** Packs the digest's hex pairs into `codes`; false (and `codes` cut back) when it is not 32 lower-case hex. */
function packHex(digest: string): boolean {
  if (digest.length !== 32) return false
  for (let i = 0; i < 32; i += 2) {
    const high = hexValue(digest.charCodeAt(i))
    const low = hexValue(digest.charCodeAt(i + 1))
    if (high < 0 || low < 0) {
      codes.length = HEADER
      return false
    }
    codes.push((high << 4) | low)
  }
  return true
}

/** The marker of an event done until `expiresAt` (seconds from the store's start), with its digest if any. */
export function marker(expiresAt: number, digest: string | undefined): Marker {
  if (digest === undefined) return expiresAt
  codes.length = 0
  codes.push(PACKED, (expiresAt >>> 24) & 255, (expiresAt >>> 16) & 255, (expiresAt >>> 8) & 255, expiresAt & 255)
  if (!packHex(digest)) {
    codes[0] = RAW
    for (let i = 0; i < digest.length; i++) codes.push(digest.charCodeAt(i))
  }
  return String.fromCharCode.apply(null, codes)
}

/** The marker's expiry, in seconds from the store's start. */
export function markerExpiry(marker: Marker): number {
  if (typeof marker === 'number') return marker
  return (
    ((marker.charCodeAt(1) << 24) >>> 0) +
    (marker.charCodeAt(2) << 16) +
    (marker.charCodeAt(3) << 8) +
    marker.charCodeAt(4)
  )
}

/** The digest the marker was written with, if any. */
export function markerDigest(marker: Marker): string | undefined {
  if (typeof marker === 'number') return undefined
  if (marker.charCodeAt(0) === RAW) return marker.slice(HEADER)
  let hex = ''
  for (let i = HEADER; i < marker.length; i++) hex += marker.charCodeAt(i).toString(16).padStart(2, '0')
  return hex
}
