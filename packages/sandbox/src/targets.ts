// Which urls the sandbox sends to. It runs on developer machines, often shared ones: a subscription
// must not turn it into a way to reach cloud metadata services or smuggle headers.
import { lookup } from 'node:dns/promises'
import { BlockList, isIP } from 'node:net'
import { SandboxHttpError } from './errors.js'

// IPv4-mapped IPv6 forms (::ffff:169.254.169.254) match the IPv4 rules too; other IPv6 forms that carry an
// IPv4 address are checked through embeddedIpv4.
const refused = new BlockList()
refused.addSubnet('169.254.0.0', 16, 'ipv4') // link-local: the metadata service of most clouds
refused.addAddress('100.100.100.200', 'ipv4') // Alibaba Cloud metadata
refused.addAddress('168.63.129.16', 'ipv4') // Azure host agent (WireServer)
refused.addSubnet('fe80::', 10, 'ipv6') // link-local
refused.addAddress('fd00:ec2::254', 'ipv6') // AWS metadata over IPv6
const METADATA_NAMES: ReadonlySet<string> = new Set(['metadata.google.internal', 'metadata.goog'])

const loopback = new BlockList()
loopback.addSubnet('127.0.0.0', 8, 'ipv4')
loopback.addAddress('::1', 'ipv6')

/** The 16 bytes of an IPv6 literal (`isIP` said 6; a `%zone` is dropped). */
function ipv6Bytes(address: string): Uint8Array {
  let text = address.replace(/%.*$/, '')
  const bytes = new Uint8Array(16)
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text)
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number]
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head = '', tail] = text.split('::')
  const groups = (part: string) => (part === '' ? [] : part.split(':').map((group) => Number.parseInt(group, 16)))
  const front = groups(head)
  const back = tail === undefined ? [] : groups(tail)
  const all = [...front, ...new Array<number>(8 - front.length - back.length).fill(0), ...back]
  all.forEach((group, i) => {
    bytes[2 * i] = group >> 8
    bytes[2 * i + 1] = group & 0xff
  })
  return bytes
}

const ipv4 = (bytes: ArrayLike<number>) => Array.from(bytes).join('.')
const zero = (bytes: Uint8Array, from: number, to: number) => bytes.subarray(from, to).every((byte) => byte === 0)

/**
 * The IPv4 addresses an IPv6 address carries in its last 32 bits as an IPv4-compatible (`::a.b.c.d`),
 * IPv4-translated (`::ffff:0:a.b.c.d`) or NAT64 well-known-prefix (`64:ff9b::a.b.c.d`) address, or at any of
 * RFC 6052's positions in the local-use NAT64 prefix `64:ff9b:1::/48` (prefix lengths 48, 56, 64 and 96).
 */
function embeddedIpv4(bytes: Uint8Array): string[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, 16)
  const group = (i: number) => view.getUint16(2 * i)
  const byte = (i: number) => view.getUint8(i)
  const last = ipv4(bytes.subarray(12))
  if (zero(bytes, 0, 12)) return [last]
  if (zero(bytes, 0, 8) && group(4) === 0xffff && group(5) === 0) return [last]
  if (group(0) !== 0x64 || group(1) !== 0xff9b) return []
  if (zero(bytes, 4, 12)) return [last]
  if (group(2) !== 1) return []
  // Byte 8 (bits 64 to 71) is never part of the embedded address.
  return [
    ipv4([byte(6), byte(7), byte(9), byte(10)]),
    ipv4([byte(7), byte(9), byte(10), byte(11)]),
    ipv4(bytes.subarray(9, 13)),
    last,
  ]
}

/** The bare IP literal of `address` (brackets dropped) and its family, 0 when it is not one. */
function literal(address: string): { bare: string; family: number } {
  const bare = address.startsWith('[') ? address.slice(1, -1) : address
  return { bare, family: isIP(bare) }
}

/**
 * Whether `address` (an IP literal, brackets allowed) is link-local or a cloud metadata or host-agent address,
 * also as an IPv6 address that carries one (IPv4-mapped, IPv4-compatible, NAT64).
 */
export function isRefusedAddress(address: string): boolean {
  const { bare, family } = literal(address)
  if (family === 0) return false
  if (family === 4) return refused.check(bare, 'ipv4')
  return refused.check(bare, 'ipv6') || embeddedIpv4(ipv6Bytes(bare)).some((ip) => refused.check(ip, 'ipv4'))
}

/** Whether `address` is a loopback IP literal (127.0.0.0/8, ::1, or their IPv4-mapped form). */
export function isLoopbackAddress(address: string): boolean {
  const { bare, family } = literal(address)
  return family !== 0 && loopback.check(bare, family === 4 ? 'ipv4' : 'ipv6')
}

function badRequest(message: string): never {
  throw new SandboxHttpError(400, message)
}

/**
 * Checks a subscription or test url: absolute http(s), no whitespace or control characters (the URL
 * parser silently drops CR, LF and tab, so they are checked on the text), no `user:password@`, and
 * no link-local, metadata or host-agent host (also inside an IPv6 address). Returns the url as given.
 */
export function checkTargetUrl(value: unknown, field = 'url'): string {
  if (typeof value !== 'string' || value === '') badRequest(`${field} must be a non-empty string`)
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u0020\u007f]/.test(value)) {
    badRequest(`${field} must not contain spaces or control characters such as CR or LF`)
  }
  let parsed: URL
  try {
    parsed = new URL(value)
  } catch {
    badRequest(`${field} must be an absolute http(s) url`)
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') badRequest(`${field} must be an http(s) url`)
  if (parsed.username !== '' || parsed.password !== '') {
    badRequest(`${field} must not contain credentials (user:password@)`)
  }
  const host = parsed.hostname.replace(/\.$/, '').toLowerCase()
  if (isRefusedAddress(host) || METADATA_NAMES.has(host)) {
    badRequest(`${field} must not point at a link-local or cloud metadata address`)
  }
  return value
}

/** Resolves a host name to its addresses, as `dns.promises.lookup(name, { all: true })` does. */
export type Resolver = (hostname: string) => Promise<{ address: string }[]>

const systemResolver: Resolver = (hostname) => lookup(hostname, { all: true, verbatim: true })

/**
 * Whether the host of `url` resolves to a refused address: a name can point where a literal may
 * not. A name that does not resolve is left to the send to fail. (The send resolves it again, so a
 * name that changes its answer in between is not caught: this guards against mistakes and plain
 * names, not against a hostile DNS server.)
 */
export async function resolvesToRefused(url: string, resolve: Resolver = systemResolver): Promise<boolean> {
  const host = new URL(url).hostname.replace(/\.$/, '')
  if (isIP(host.startsWith('[') ? host.slice(1, -1) : host) !== 0) return isRefusedAddress(host)
  try {
    return (await resolve(host)).some(({ address }) => isRefusedAddress(address))
  } catch {
    return false
  }
}
