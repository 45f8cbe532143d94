// Which urls the sandbox sends to. It runs on developer machines, often shared ones: a subscription
// must not turn it into a way to reach cloud metadata services or smuggle headers.
import { lookup } from 'node:dns/promises'
import { BlockList, isIP } from 'node:net'
import { SandboxHttpError } from './errors.js'

// IPv4-mapped IPv6 forms (::ffff:169.254.169.254) match the IPv4 rules too.
const refused = new BlockList()
refused.addSubnet('169.254.0.0', 16, 'ipv4') // link-local: the metadata service of most clouds
refused.addAddress('100.100.100.200', 'ipv4') // Alibaba Cloud metadata
refused.addSubnet('fe80::', 10, 'ipv6') // link-local
refused.addAddress('fd00:ec2::254', 'ipv6') // AWS metadata over IPv6
const METADATA_NAMES: ReadonlySet<string> = new Set(['metadata.google.internal', 'metadata.goog'])

const loopback = new BlockList()
loopback.addSubnet('127.0.0.0', 8, 'ipv4')
loopback.addAddress('::1', 'ipv6')

function checkIp(list: BlockList, address: string): boolean {
  const bare = address.startsWith('[') ? address.slice(1, -1) : address
  const family = isIP(bare)
  return family === 0 ? false : list.check(bare, family === 4 ? 'ipv4' : 'ipv6')
}

/** Whether `address` (an IP literal, brackets allowed) is link-local or a cloud metadata address. */
export const isRefusedAddress = (address: string): boolean => checkIp(refused, address)

/** Whether `address` is a loopback IP literal (127.0.0.0/8, ::1, or their IPv4-mapped form). */
export const isLoopbackAddress = (address: string): boolean => checkIp(loopback, address)

function badRequest(message: string): never {
  throw new SandboxHttpError(400, message)
}

/**
 * Checks a subscription or test url: absolute http(s), no whitespace or control characters (the URL
 * parser silently drops CR, LF and tab, so they are checked on the text), no `user:password@`, and
 * no link-local or metadata host. Returns the url as given.
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
