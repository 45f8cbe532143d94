// What prove keeps of a receiver's answer, which may be hostile or careless: at most ANSWER_CAP_BYTES of it, turned
// into one line of plain text in time linear in its length (no backtracking pattern), with nothing a terminal would
// act on (escape sequences, control and bidirectional-formatting characters), so an answer cannot rewrite the report.

/** Most bytes of an answer body read; the rest is never read (the connection is closed). */
export const ANSWER_CAP_BYTES = 64 * 1024

const ESC = 0x1b
const BEL = 0x07

/** Characters a terminal acts on, or that reorder or hide text: C0, DEL, C1, bidi controls, line separators. */
function isControl(code: number): boolean {
  return (
    code < 0x20 ||
    (code >= 0x7f && code <= 0x9f) ||
    code === 0x061c ||
    (code >= 0x200b && code <= 0x200f) ||
    (code >= 0x2028 && code <= 0x202e) ||
    (code >= 0x2060 && code <= 0x2069) ||
    code === 0xfeff
  )
}

/** The index of the last character of the escape sequence starting with ESC at `at`. */
function escapeEnd(text: string, at: number): number {
  const next = text.charCodeAt(at + 1)
  if (next === 0x5b) {
    // CSI: parameter bytes, intermediate bytes, one final byte.
    let i = at + 2
    while (i < text.length && text.charCodeAt(i) >= 0x30 && text.charCodeAt(i) <= 0x3f) i++
    while (i < text.length && text.charCodeAt(i) >= 0x20 && text.charCodeAt(i) <= 0x2f) i++
    return i < text.length && text.charCodeAt(i) >= 0x40 && text.charCodeAt(i) <= 0x7e ? i : i - 1
  }
  // OSC, DCS, SOS, PM, APC: a string ended by BEL or ESC \ (unended: the rest of the text).
  if (next === 0x5d || next === 0x50 || next === 0x58 || next === 0x5e || next === 0x5f) {
    for (let i = at + 2; i < text.length; i++) {
      const code = text.charCodeAt(i)
      if (code === BEL) return i
      if (code === ESC) return text.charCodeAt(i + 1) === 0x5c ? i + 1 : i - 1
    }
    return text.length - 1
  }
  // Any other two-character sequence (ESC c, ESC 7, ...).
  return next >= 0x20 && next <= 0x7e ? at + 1 : at
}

/**
 * `text` with every terminal escape sequence removed and every control, bidirectional-formatting or invisible
 * character turned into a space. One pass over the text.
 *
 * @example
 * cleanText('\u001b[2Jok\u0007') // ' ok '
 */
export function cleanText(text: string): string {
  const parts: string[] = []
  let from = 0
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (!isControl(code)) continue
    parts.push(text.slice(from, i), ' ')
    if (code === ESC) i = escapeEnd(text, i)
    from = i + 1
  }
  parts.push(text.slice(from))
  return parts.join('')
}

const SKIPPED = ['head', 'style', 'script']

/** Whether `text` has the lower-case ASCII `word` at `at`, in any case, not followed by another name character. */
function nameAt(text: string, at: number, word: string): boolean {
  for (let i = 0; i < word.length; i++) {
    if ((text.charCodeAt(at + i) | 0x20) !== word.charCodeAt(i)) return false
  }
  return !/[A-Za-z0-9-]/.test(text.charAt(at + word.length))
}

/**
 * The text of an HTML page: tags dropped, and what `head`, `style` and `script` hold; an unclosed tag ends the text.
 * One pass: each search starts where the last ended.
 *
 * @example
 * htmlText('<html><head><title>x</title></head><body>Not found</body></html>') // '  Not found  '
 */
export function htmlText(html: string): string {
  const parts: string[] = []
  let i = 0
  while (i < html.length) {
    const open = html.indexOf('<', i)
    if (open === -1) {
      parts.push(html.slice(i))
      break
    }
    parts.push(html.slice(i, open), ' ')
    const close = html.indexOf('>', open + 1)
    if (close === -1) break
    i = close + 1
    const skipped = SKIPPED.find((name) => nameAt(html, open + 1, name))
    if (skipped === undefined) continue
    // Up to the end tag of the same name, or to the end.
    for (let from = i; ; ) {
      const end = html.indexOf('</', from)
      if (end === -1) return parts.join('')
      if (nameAt(html, end + 2, skipped)) {
        const after = html.indexOf('>', end + 2)
        if (after === -1) return parts.join('')
        i = after + 1
        break
      }
      from = end + 2
    }
  }
  return parts.join('')
}
