import * as v from 'valibot'
import { type Check, INVALID, isPrimitive, mayOwnUncopied, type Part, UNCOPIED } from './part.js'

/** `v.safeParse`'s output for an array given to a loose object (a plain-object copy), or `INVALID`. */
function arrayOutput(schema: Part, input: unknown): unknown {
  const result = v.safeParse(schema as unknown as v.GenericSchema, input)
  return result.success ? result.output : INVALID
}

/** The JavaScript a generated check is made of, and the values it reads through `r[i]`. */
interface Generated {
  readonly lines: string[]
  readonly refs: unknown[]
  next: number
}

const EMPTY_CODE: Readonly<Record<string, (name: string) => string>> = {
  optional: (name) => `${name} === undefined`,
  nullable: (name) => `${name} === null`,
  nullish: (name) => `${name} == null`,
  exact_optional: () => 'false',
}

function ref(g: Generated, value: unknown): string {
  g.refs.push(value)
  return `r[${g.refs.length - 1}]`
}

function fresh(g: Generated, input: string): string {
  const name = `v${g.next++}`
  g.lines.push(`let ${name} = ${input};`)
  return name
}

/**
 * Writes statements that check the variable `input` against `schema` as the closures of `compile` (closures.ts)
 * do (returning `I` on failure) and returns the variable holding the output, or `undefined` for a part it does not cover.
 * Values (literals, defaults, schemas, keys to drop) are read from `r`; only variable names, numbers of its own
 * and JSON-quoted entry keys are written into the code.
 */
function generate(g: Generated, schema: Part, input: string): string | undefined {
  if (schema.async || 'fallback' in schema || 'cache' in schema) return undefined
  const lines = g.lines
  if (schema.pipe) {
    let out = input
    for (const item of schema.pipe) {
      if (item.async) return undefined
      if (item.kind === 'schema') {
        const next = generate(g, item, out)
        if (next === undefined) return undefined
        out = next
      } else if (item.kind === 'validation') {
        if (item.reference === v.integer) lines.push(`if (!Number.isInteger(${out})) return I;`)
        else if (item.reference === v.minLength && typeof item.requirement === 'number') {
          lines.push(`if (${out}.length < ${ref(g, item.requirement)}) return I;`)
        } else lines.push(`if (${ref(g, item)}['~run']({ typed: true, value: ${out} }, config()).issues) return I;`)
      } else if (item.kind !== 'metadata' && item.reference !== v.brand && item.reference !== v.readonly) {
        return undefined
      }
    }
    return out
  }
  switch (schema.reference) {
    case v.string:
      lines.push(`if (typeof ${input} !== 'string') return I;`)
      return input
    case v.number:
      lines.push(`if (typeof ${input} !== 'number' || ${input} !== ${input}) return I;`)
      return input
    case v.boolean:
      lines.push(`if (typeof ${input} !== 'boolean') return I;`)
      return input
    case v.null_:
      lines.push(`if (${input} !== null) return I;`)
      return input
    case v.unknown:
    case v.any:
      return input
    case v.literal:
      lines.push(
        typeof schema.literal === 'string'
          ? `if (${input} !== ${ref(g, schema.literal)}) return I;`
          : `if (!same(${input}, ${ref(g, schema.literal)})) return I;`,
      )
      return input
    case v.picklist:
      lines.push(`if (!${ref(g, schema.options ?? [])}.includes(${input})) return I;`)
      return input
    case v.custom:
      lines.push(`if (!${ref(g, schema)}.check?.(${input})) return I;`)
      return input
    case v.optional:
    case v.exactOptional:
    case v.nullable:
    case v.nullish:
      return generateWrapper(g, schema, input)
    case v.looseObject:
      return generateLooseObject(g, schema, input)
    default:
      return undefined
  }
}

function generateWrapper(g: Generated, schema: Part, input: string): string | undefined {
  const empty = EMPTY_CODE[schema.type]
  const fallback = schema.default
  if (!schema.wrapped || !empty || !isPrimitive(fallback)) return undefined
  const out = fresh(g, input)
  if (fallback !== undefined) g.lines.push(`if (${empty(out)}) ${out} = ${ref(g, fallback)};`)
  g.lines.push(`if (!(${empty(out)})) {`)
  const inner = generate(g, schema.wrapped, out)
  if (inner === undefined) return undefined
  if (inner !== out) g.lines.push(`${out} = ${inner};`)
  g.lines.push('}')
  return out
}

function generateLooseObject(g: Generated, schema: Part, input: string): string | undefined {
  const lines = g.lines
  const entries = schema.entries ?? {}
  const out = fresh(g, input)
  lines.push(`if (!${input} || typeof ${input} !== 'object') return I;`)
  lines.push(
    `if (Array.isArray(${input})) { ${out} = arrayOutput(${ref(g, schema)}, ${input}); if (${out} === I) return I; } else {`,
  )
  const uncopied = UNCOPIED.filter((key) => !Object.hasOwn(entries, key))
  lines.push(
    `if (mayOwnUncopied(${input})) for (const k of ${ref(g, uncopied)}) if (Object.hasOwn(${input}, k)) delete ${input}[k];`,
  )
  for (const key in entries) {
    if (key === '__proto__') return undefined
    const entry = entries[key] as Part
    const quoted = JSON.stringify(key)
    const inherited = key in {}
    const optional = entry.type === 'optional' || entry.type === 'nullish' || entry.type === 'exact_optional'
    const fallback = optional ? entry.default : undefined
    const value = fresh(g, `${input}[${quoted}]`)
    // JSON has no undefined values: `in` only runs for missing keys.
    lines.push(`if (${value} !== undefined || ${quoted} in ${input}) {`)
    const output = generate(g, entry, value)
    if (output === undefined) return undefined
    if (inherited) lines.push(`${input}[${quoted}] = ${output};`)
    else if (output !== value) lines.push(`if (${output} !== ${value}) ${input}[${quoted}] = ${output};`)
    lines.push('} else {')
    if (fallback !== undefined) {
      const filled = generate(g, entry, fresh(g, ref(g, fallback)))
      if (filled === undefined) return undefined
      lines.push(`${input}[${quoted}] = ${filled};`)
    } else if (!optional) lines.push('return I;')
    lines.push('}')
  }
  lines.push('}')
  return out
}

/** Whether this runtime compiles code from strings: Cloudflare Workers refuse to. */
let generating: boolean | undefined
function canGenerate(): boolean {
  if (generating === undefined) {
    try {
      generating = new Function('return true')() === true
    } catch {
      generating = false
    }
  }
  return generating
}

/**
 * `schema`'s check as one generated function: named property reads and no call per field, about four times
 * faster than the closures for the built-in schemas (the closures' calls through a different function per
 * entry went megamorphic). `undefined` where `compile` (closures.ts) would give up, or where the runtime cannot
 * compile code (Workers): the closures are used then.
 */
export function generateCheck(schema: Part): Check | undefined {
  if (!canGenerate()) return undefined
  const g: Generated = { lines: [], refs: [], next: 0 }
  const out = generate(g, schema, 'x')
  if (out === undefined) return undefined
  const body = `return function check(x) {\n${g.lines.join('\n')}\nreturn ${out};\n}`
  const make = new Function('r', 'I', 'same', 'config', 'mayOwnUncopied', 'arrayOutput', body)
  return make(g.refs, INVALID, v._isSameValueZero, v.getGlobalConfig, mayOwnUncopied, arrayOutput) as Check
}
