import { describe, expect, it } from 'vitest'
import { SandboxHttpError } from './errors.js'
import { checkTargetUrl, isLoopbackAddress, isRefusedAddress, type Resolver, resolvesToRefused } from './targets.js'

function refusal(url: string): string | undefined {
  try {
    checkTargetUrl(url)
    return undefined
  } catch (error) {
    expect(error).toBeInstanceOf(SandboxHttpError)
    expect((error as SandboxHttpError).status).toBe(400)
    return (error as Error).message
  }
}

describe('checkTargetUrl', () => {
  it('accepts http(s) urls on loopback, names and other addresses, returning them as given', () => {
    for (const url of [
      'http://127.0.0.1:3000/webhooks',
      'https://localhost/webhooks?x=1',
      'http://[::1]:8080/hook',
      'https://hooks.example.com/payhooks',
      'http://169.255.0.1/not-link-local',
      'http://168.63.129.17/',
      'http://[64:ff9b::808:808]/', // NAT64 of 8.8.8.8
      'http://[::ffff:a00:1]/', // 10.0.0.1, IPv4-mapped
      'http://[64:ff9b:1::a00:1]/',
      'http://[2001:db8::a9fe:a9fe]/', // the same last 32 bits, but no prefix that embeds an IPv4 address
    ]) {
      expect(checkTargetUrl(url)).toBe(url)
    }
  })

  it('refuses credentials in the url', () => {
    expect(refusal('http://user:pass@127.0.0.1/hook')).toBe('url must not contain credentials (user:password@)')
    expect(refusal('http://user@127.0.0.1/hook')).toBe('url must not contain credentials (user:password@)')
  })

  it('refuses CR, LF, tab and other control characters, which the URL parser would silently drop', () => {
    for (const url of [
      'http://127.0.0.1/a\r\nX-Injected: 1',
      'http://127.0.0.1/a\nb',
      'http://127.0.0.1/\tx',
      'http://127.0.0.1/a b',
    ]) {
      expect(refusal(url)).toBe('url must not contain spaces or control characters such as CR or LF')
    }
  })

  it('refuses link-local and metadata hosts in every spelling the URL parser normalizes', () => {
    for (const url of [
      'http://169.254.169.254/latest/meta-data/',
      'http://169.254.0.1:8080/',
      'http://2852039166/', // 169.254.169.254 as one number
      'http://0xa9.0xfe.0xa9.0xfe/',
      'http://169.254.169.254./',
      'http://[::ffff:169.254.169.254]/',
      'http://[fe80::1]/',
      'http://[febf:ffff::1]/',
      'http://[fd00:ec2::254]/latest/meta-data/',
      'http://100.100.100.200/latest/meta-data/',
      'http://metadata.google.internal/computeMetadata/v1/',
      'http://METADATA.GOOGLE.INTERNAL./',
      'http://168.63.129.16/machine?comp=goalstate', // Azure host agent
      'http://[::ffff:a83f:8110]/', // 168.63.129.16, IPv4-mapped in hex
      'http://[::ffff:168.63.129.16]/',
      'http://[::169.254.169.254]/', // IPv4-compatible
      'http://[::a9fe:a9fe]/',
      'http://[::ffff:0:169.254.169.254]/', // IPv4-translated
      'http://[64:ff9b::169.254.169.254]/', // NAT64, well-known prefix
      'http://[64:ff9b::a83f:8110]/',
      'http://[64:ff9b:1::a9fe:a9fe]/', // local-use NAT64 with a /96 prefix
      'http://[64:ff9b:1:a83f:81:1000::]/', // 168.63.129.16 with a /48 prefix (bits 64-71 skipped)
      'http://[64:ff9b:1:a8:3f:8110::]/', // ... /56
      'http://[64:ff9b:1:0:a8:3f81:1000:0]/', // ... /64
    ]) {
      expect({ url, message: refusal(url) }).toEqual({
        url,
        message: 'url must not point at a link-local or cloud metadata address',
      })
    }
  })

  it('keeps the earlier rules: absolute http(s) only, named field', () => {
    expect(refusal('ftp://example.com/x')).toBe('url must be an http(s) url')
    expect(refusal('/relative')).toBe('url must be an absolute http(s) url')
    expect(() => checkTargetUrl('', 'target')).toThrow('target must be a non-empty string')
  })
})

describe('addresses', () => {
  it('tells loopback and refused addresses apart', () => {
    expect(['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1'].map(isLoopbackAddress)).toEqual([
      true,
      true,
      true,
      true,
    ])
    expect(['0.0.0.0', '::', '10.0.0.1', 'fe80::1', ''].map(isLoopbackAddress)).toEqual([
      false,
      false,
      false,
      false,
      false,
    ])
    expect(['169.254.1.1', 'fe80::abcd', '[fd00:ec2::254]'].map(isRefusedAddress)).toEqual([true, true, true])
    expect(['127.0.0.1', 'fec0::1', 'example.com'].map(isRefusedAddress)).toEqual([false, false, false])
    // As a resolver gives them: dotted tails, a zone id.
    expect(['::169.254.169.254', '64:ff9b::168.63.129.16', 'fe80::1%eth0'].map(isRefusedAddress)).toEqual([
      true,
      true,
      true,
    ])
    // Only 127.0.0.0/8, ::1 and IPv4-mapped loopback are loopback: a NAT64 form is not this machine.
    expect(['64:ff9b::127.0.0.1', '::127.0.0.1'].map(isLoopbackAddress)).toEqual([false, false])
  })
})

describe('resolvesToRefused', () => {
  const resolver =
    (table: Record<string, string[]>): Resolver =>
    async (hostname) => {
      const addresses = table[hostname]
      if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' })
      return addresses.map((address) => ({ address }))
    }
  const dns = resolver({
    'metadata.internal.example': ['169.254.169.254'],
    'mixed.example': ['127.0.0.1', 'fe80::1'],
    'nat64.example': ['64:ff9b::a9fe:a9fe'],
    'receiver.example': ['127.0.0.1', '::1'],
  })

  it('refuses a name that resolves to a link-local address, even among others', async () => {
    expect(await resolvesToRefused('http://metadata.internal.example/x', dns)).toBe(true)
    expect(await resolvesToRefused('http://mixed.example:8080/x', dns)).toBe(true)
    expect(await resolvesToRefused('http://nat64.example/x', dns)).toBe(true)
  })

  it('lets other names through, and leaves names that do not resolve to the send', async () => {
    expect(await resolvesToRefused('http://receiver.example/x', dns)).toBe(false)
    expect(await resolvesToRefused('http://unknown.example/x', dns)).toBe(false)
  })

  it('checks IP literals without asking the resolver', async () => {
    const never: Resolver = () => Promise.reject(new Error('must not be called'))
    expect(await resolvesToRefused('http://[fe80::2]/', never)).toBe(true)
    expect(await resolvesToRefused('http://127.0.0.1:9/', never)).toBe(false)
  })
})
