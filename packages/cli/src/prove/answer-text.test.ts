// A receiver's answer as prove keeps it: at most ANSWER_CAP_BYTES read over the socket, one line of plain text,
// nothing a terminal acts on, and the text made in one pass (a 200 KB answer of tags that never close cost 72 s of
// CPU in the pattern this replaced, the give-up timer unable to fire meanwhile).
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { ANSWER_CAP_BYTES, cleanText, htmlText } from './answer-text.js'
import { readAnswer, Sender } from './send.js'

/** Anything a terminal would act on or that reorders text: C0, DEL, C1, bidi controls, line separators. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what must not come through
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/

describe('cleanText', () => {
  it('drops escape sequences whole and turns every other control character into a space', () => {
    expect(cleanText('\u001b[2J\u001b[1;1Hok')).toBe('  ok')
    expect(cleanText('a\u001b]0;pwned title\u0007b')).toBe('a b')
    expect(cleanText('a\u001b]8;;http://x\u001b\\link\u001b]8;;\u001b\\b')).toBe('a link b')
    expect(cleanText('a\u001bcb')).toBe('a b')
    expect(cleanText('x\r\ny\tz\u0000\u009b31m\u202eevil\u2066')).toBe('x  y z  31m evil ')
    expect(cleanText('an unended \u001b]0;title')).toBe('an unended  ')
    expect(cleanText('plain, é, 漢字, 👍')).toBe('plain, é, 漢字, 👍')
  })

  it('leaves nothing a terminal acts on, whatever the input', () => {
    const every = Array.from({ length: 0x3000 }, (_, code) => String.fromCharCode(code)).join('')
    expect(cleanText(every + every.split('').reverse().join(''))).not.toMatch(CONTROL)
  })
})

describe('readAnswer', () => {
  it('reads an HTML page as its text, without head, style or script', () => {
    expect(
      readAnswer('<html><head><title>x</title></head><body><pre>Cannot GET /webhooks</pre></body></html>'),
    ).toEqual({ reason: 'Cannot GET /webhooks' })
    expect(readAnswer('<p>a</p><SCRIPT>alert(1)</script ><header>b</header><style>p{}</style>c').reason).toBe('a b c')
    expect(readAnswer('<p>ok</p><p unclosed').reason).toBe('ok')
  })

  it('keeps no control character of a JSON reason or status', () => {
    const answer = readAnswer(
      JSON.stringify({ error: 'bad\u001b[31m', message: 'x\u001b]0;t\u0007y', status: 'par\u001b[2Jked' }),
    )
    expect(answer).toEqual({ reason: 'bad : x y', outcome: 'par ked' })
  })

  // Each of these took the replaced pattern (<(head|style|script)[\s\S]*?<\/\1>|<[^>]*>) a time quadratic in
  // the length: every "<" scanned to the end of the text.
  it.each([
    ['tags that never close', '<head'.repeat(40_000), ''],
    ['opening angles alone', '<'.repeat(200_000), ''],
    ['scripts that never end', '<script>'.repeat(25_000), ''],
    ['end tags of another name', `<style>${'</head>'.repeat(30_000)}`, ''],
    ['escapes between tags', `<b>${'\u001b[1m<i>x</i>'.repeat(15_000)}`, 'x x x'],
  ])('reads 200 KB of %s', (_, text, start) => {
    expect(text.length).toBeGreaterThanOrEqual(180_000)
    const { reason } = readAnswer(text)
    expect(reason.startsWith(start)).toBe(true)
    expect(reason.length).toBeLessThanOrEqual(100)
    expect(reason).not.toMatch(CONTROL)
  })

  it('runs no pattern that can backtrack: only \\s+ and a one-character class', () => {
    // Every regular expression reading the answer goes through RegExp.prototype.exec (replace and test too).
    const sources = new Set<string>()
    const exec = RegExp.prototype.exec
    const spy = vi.spyOn(RegExp.prototype, 'exec').mockImplementation(function (this: RegExp, text: string) {
      sources.add(this.source)
      return exec.call(this, text)
    })
    try {
      for (const text of [
        '<head<head<style>',
        '<p>a</p><script>b</script>c',
        '{"error":"e","status":"s"}',
        'x \u001b[1m',
      ]) {
        readAnswer(text)
      }
    } finally {
      spy.mockRestore()
    }
    expect(sources.has('\\s+')).toBe(true) // the spy sees them
    expect([...sources].filter((source) => !['\\s+', '[A-Za-z0-9-]'].includes(source))).toEqual([])
  })

  it('htmlText drops an unclosed tag and everything after it', () => {
    expect(htmlText('before<a href="x')).toBe('before ')
    expect(htmlText('a<script>b</scriptx>c</script>d')).toBe('a d')
  })
})

describe('Sender', () => {
  /** Bytes each answer's server wrote before prove closed the connection. */
  const written: number[] = []
  const TOTAL = 600 * 1024 * 1024
  // 600 MB per answer, made as it is read: the server stops when the client goes away.
  const server = createServer((req, res) => {
    req.resume()
    res.writeHead(200, { 'content-type': 'text/html' })
    const chunk = Buffer.alloc(64 * 1024, '<head\u001b[2J')
    let sent = 0
    res.on('close', () => written.push(sent))
    const pump = () => {
      while (sent < TOTAL && !res.destroyed) {
        sent += chunk.length
        if (!res.write(chunk)) return void res.once('drain', pump)
      }
      if (sent >= TOTAL) res.end()
    }
    pump()
  })
  const listening = new Promise<string>((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`)),
  )
  afterAll(() => new Promise((resolve) => server.close(resolve)))

  it(`reads at most ${ANSWER_CAP_BYTES} bytes of an endless answer, then closes the connection`, async () => {
    const sender = new Sender(await listening)
    const answers = [await sender.send({ label: 'one' }), await sender.send({ label: 'two' })]
    for (const answer of answers) {
      expect(answer).toMatchObject({ status: 200, reason: '' })
      expect(answer.error).toBeUndefined()
    }
    // The server sees the client's sockets close: I/O, which a loaded machine may take more than poll's 1 s over.
    await expect.poll(() => written.length, { timeout: 10_000 }).toBe(2)
    // What the server got written before the close: the cap, and what the sockets' buffers hold, not 600 MB.
    for (const bytes of written) expect(bytes).toBeLessThan(32 * 1024 * 1024)
  })
})
