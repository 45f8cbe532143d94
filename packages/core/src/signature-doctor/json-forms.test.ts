// The re-formatted JSON forms, written in one pass over the compact bytes, are the forms JSON.stringify and a
// recursive writer give (the doctor's implementation before the pass), for any JSON within the doctor's limits.
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { JSON_MAX_BYTES, JSON_MAX_DEPTH, JSON_MAX_VALUES, jsonForms } from './json-forms.js'

const encoder = new TextEncoder()
const decoder = new TextDecoder()

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys)
  if (typeof value !== 'object' || value === null) return value
  const sorted: Record<string, unknown> = Object.create(null)
  for (const key of Object.keys(value).sort()) sorted[key] = sortKeys((value as Record<string, unknown>)[key])
  return sorted
}

function spaced(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(spaced).join(', ')}]`
  if (typeof value !== 'object' || value === null) return JSON.stringify(value)
  const entries = Object.entries(value).map(([key, item]) => `${JSON.stringify(key)}: ${spaced(item)}`)
  return `{${entries.join(', ')}}`
}

const asciiEscaped = (text: string) =>
  text.replace(/[\u0080-\uffff]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`)

/** The forms as the doctor wrote them before: parse, then JSON.stringify and a recursive writer. */
function reference(text: string): string[] {
  const value: unknown = JSON.parse(text)
  const forms = new Set<string>()
  for (const ordered of [value, sortKeys(value)]) {
    for (const form of [
      JSON.stringify(ordered),
      spaced(ordered),
      JSON.stringify(ordered, null, 2),
      JSON.stringify(ordered, null, 4),
    ]) {
      forms.add(form)
      forms.add(asciiEscaped(form))
    }
  }
  forms.delete(text)
  return [...forms].sort()
}

const written = (text: string) => {
  const { forms, complete } = jsonForms(encoder.encode(text))
  return { forms: forms.map((form) => decoder.decode(form)).sort(), complete }
}

describe('jsonForms', () => {
  it('writes the forms JSON.stringify and a recursive writer give, for JSON of any shape', () => {
    const json = fc.record({
      value: fc.jsonValue({ maxDepth: 6 }),
      indent: fc.constantFrom(undefined, 2, 4),
    })
    fc.assert(
      fc.property(json, ({ value, indent }) => {
        const text = JSON.stringify(value, null, indent) ?? 'null'
        fc.pre(text.length <= JSON_MAX_BYTES / 4 && (text.match(/[[{,:]/g) ?? []).length <= JSON_MAX_VALUES / 4)
        const { forms, complete } = written(text)
        expect(complete).toBe(true)
        expect(forms).toEqual(reference(text))
      }),
      { numRuns: 300 },
    )
  })

  it('writes forms of non-ASCII text, empty containers, escapes and keys out of order', () => {
    const text = '{"z":[],"é":{"東":"😀\\n\\"\\\\","a":{}},"b":[1e20,-0,[{}]],"a":"\\ud800","__proto__":{"y":1,"x":2}}'
    expect(written(text)).toEqual({ forms: reference(text), complete: true })
  })

  it(`does not parse JSON nested over ${JSON_MAX_DEPTH} deep, over ${JSON_MAX_VALUES} values or ${JSON_MAX_BYTES} bytes`, () => {
    const deep = '['.repeat(JSON_MAX_DEPTH + 1) + ']'.repeat(JSON_MAX_DEPTH + 1)
    const wide = `[${'0,'.repeat(JSON_MAX_VALUES)}0]`
    const long = `["${'x'.repeat(JSON_MAX_BYTES)}"]`
    for (const text of [deep, wide, long]) expect(written(text)).toEqual({ forms: [], complete: false })
    // Brackets inside strings are text, not nesting.
    const quoted = `["${'['.repeat(JSON_MAX_DEPTH + 1)}"]`
    expect(written(quoted)).toEqual({ forms: reference(quoted), complete: true })
  })

  it('leaves out a form longer than three times the body and 4 KiB, and says so', () => {
    // Indented 4 at depth 31, each of 100 values is a line of 124 spaces: far over the limit.
    const text = `${'['.repeat(30)}[${Array(100).fill('0').join(',')}]${']'.repeat(30)}`
    const { forms, complete } = written(text)
    expect(complete).toBe(false)
    expect(forms).toContain(JSON.stringify(JSON.parse(text), null, 0).replaceAll(',', ', '))
    expect(forms).not.toContain(JSON.stringify(JSON.parse(text), null, 4))
  })

  it('has no form for a body that is not JSON', () => {
    expect(written('{"a":')).toEqual({ forms: [], complete: true })
  })
})
