import * as v from 'valibot'

/** What valibot would output for `value`: `value` itself (filled in place), a replacement, or `INVALID`. */
type Check = (value: unknown) => unknown

/** The parts of a valibot schema or action the compiler reads. */
interface Part {
  readonly kind: string
  readonly type: string
  readonly reference: unknown
  readonly async: boolean
  readonly '~run': (
    dataset: { typed: true; value: unknown },
    config: v.Config<v.BaseIssue<unknown>>,
  ) => { issues?: unknown }
  readonly pipe?: readonly Part[]
  readonly wrapped?: Part
  readonly default?: unknown
  readonly entries?: Readonly<Record<string, Part>>
  readonly literal?: unknown
  readonly options?: readonly unknown[]
  readonly check?: (value: unknown) => boolean
  readonly requirement?: unknown
}

const INVALID = Symbol('invalid')
/** Own keys looseObject does not copy to its output (valibot's `_isValidObjectKey`). */
const UNCOPIED = ['__proto__', 'prototype', 'constructor']
const EMPTY: Readonly<Record<string, (value: unknown) => boolean>> = {
  optional: (value) => value === undefined,
  nullable: (value) => value === null,
  nullish: (value) => value == null,
  exact_optional: () => false,
}
const compiled = new WeakMap<object, ((value: unknown) => boolean) | null>()

/** Whether `object` may own a key of `UNCOPIED`: faster than `Object.hasOwn`, exact for objects of `JSON.parse`. */
const mayOwnUncopied = (object: { constructor?: unknown; prototype?: unknown; __proto__?: unknown }) =>
  object.constructor !== Object ||
  object.prototype !== undefined ||
  // biome-ignore lint/suspicious/noProto: reads an own `__proto__` key of parsed JSON, or else the prototype
  object.__proto__ !== Object.prototype

const isPrimitive = (value: unknown) => value === null || (typeof value !== 'object' && typeof value !== 'function')

function compileWrapper(schema: Part): Check | undefined {
  const wrapped = schema.wrapped && compile(schema.wrapped)
  const fallback = schema.default
  const empty = EMPTY[schema.type]
  if (!wrapped || !empty || !isPrimitive(fallback)) return undefined
  return (value) => {
    if (empty(value)) {
      if (fallback !== undefined) value = fallback
      if (empty(value)) return value
    }
    return wrapped(value)
  }
}

function compileLooseObject(schema: Part): Check | undefined {
  const entries: { key: string; check: Check; optional: boolean; fallback: unknown; inherited: boolean }[] = []
  const schemaEntries = schema.entries ?? {}
  for (const key in schemaEntries) {
    const entry = schemaEntries[key] as Part
    const check = compile(entry)
    if (!check || key === '__proto__') return undefined
    const optional = entry.type === 'optional' || entry.type === 'nullish' || entry.type === 'exact_optional'
    entries.push({ key, check, optional, fallback: optional ? entry.default : undefined, inherited: key in {} })
  }
  const uncopied = UNCOPIED.filter((key) => !Object.hasOwn(schemaEntries, key))
  return (input) => {
    if (!input || typeof input !== 'object') return INVALID
    // valibot's output for an array is a plain object: rare, so let it build that copy.
    if (Array.isArray(input)) {
      const result = v.safeParse(schema as unknown as v.GenericSchema, input)
      return result.success ? result.output : INVALID
    }
    const object = input as Record<string, unknown>
    if (mayOwnUncopied(object)) for (const key of uncopied) if (Object.hasOwn(object, key)) delete object[key]
    for (const { key, check, optional, fallback, inherited } of entries) {
      const value = object[key]
      // JSON has no undefined values: `in` only runs for missing keys.
      if (value !== undefined || key in object) {
        const output = check(value)
        if (output === INVALID) return INVALID
        if (output !== value || inherited) object[key] = output
      } else if (fallback !== undefined) {
        const output = check(fallback)
        if (output === INVALID) return INVALID
        object[key] = output
      } else if (!optional) return INVALID
    }
    return object
  }
}

function compilePipe(items: readonly Part[]): Check | undefined {
  const checks: Check[] = []
  for (const item of items) {
    if (item.async) return undefined
    if (item.kind === 'schema') {
      const check = compile(item)
      if (!check) return undefined
      checks.push(check)
    } else if (item.kind === 'validation') {
      checks.push((value) => (item['~run']({ typed: true, value }, v.getGlobalConfig()).issues ? INVALID : value))
    } else if (item.kind !== 'metadata' && item.reference !== v.brand && item.reference !== v.readonly) {
      return undefined
    }
  }
  return (value) => {
    for (const check of checks) {
      value = check(value)
      if (value === INVALID) return INVALID
    }
    return value
  }
}

function compile(schema: Part): Check | undefined {
  if (schema.async || 'fallback' in schema || 'cache' in schema) return undefined
  if (schema.pipe) return compilePipe(schema.pipe)
  switch (schema.reference) {
    case v.string:
      return (value) => (typeof value === 'string' ? value : INVALID)
    case v.number:
      return (value) => (typeof value === 'number' && !Number.isNaN(value) ? value : INVALID)
    case v.boolean:
      return (value) => (typeof value === 'boolean' ? value : INVALID)
    case v.null_:
      return (value) => (value === null ? value : INVALID)
    case v.unknown:
    case v.any:
      return (value) => value
    case v.literal: {
      const literal = schema.literal
      return (value) => (v._isSameValueZero(value, literal) ? value : INVALID)
    }
    case v.picklist: {
      const options = schema.options ?? []
      return (value) => (options.includes(value) ? value : INVALID)
    }
    case v.custom:
      return (value) => (schema.check?.(value) ? value : INVALID)
    case v.optional:
    case v.exactOptional:
    case v.nullable:
    case v.nullish:
      return compileWrapper(schema)
    case v.looseObject:
      return compileLooseObject(schema)
    default:
      return undefined
  }
}

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
 * Writes statements that check the variable `input` against `schema` as {@link compile}'s closures do (returning
 * `I` on failure) and returns the variable holding the output, or `undefined` for a part it does not cover.
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
 * entry went megamorphic). `undefined` where {@link compile} would give up, or where the runtime cannot
 * compile code (Workers): the closures are used then.
 */
function generateCheck(schema: Part): Check | undefined {
  if (!canGenerate()) return undefined
  const g: Generated = { lines: [], refs: [], next: 0 }
  const out = generate(g, schema, 'x')
  if (out === undefined) return undefined
  const body = `return function check(x) {\n${g.lines.join('\n')}\nreturn ${out};\n}`
  const make = new Function('r', 'I', 'same', 'config', 'mayOwnUncopied', 'arrayOutput', body)
  return make(g.refs, INVALID, v._isSameValueZero, v.getGlobalConfig, mayOwnUncopied, arrayOutput) as Check
}

/** How {@link compileCheck} builds a check: generated code where the runtime allows it, else closures. */
export type CheckBuilder = 'generated' | 'closures'

/** {@link compileCheck} with the builder chosen, uncached: for tests that run one suite against each. */
export function buildCheck(schema: v.GenericSchema, builder: CheckBuilder): ((value: unknown) => boolean) | undefined {
  const part = schema as unknown as Part
  const root = builder === 'generated' ? generateCheck(part) : compile(part)
  return root ? (value) => root(value) === value : undefined
}

/**
 * A check of `value` against `schema` that builds no copy of it, for the schema kinds the built-in schemas use
 * (`looseObject`, `string`, `number`, `boolean`, `null`, `literal`, `picklist`, `custom`, `unknown`, `any`,
 * `optional`/`exactOptional`/`nullable`/`nullish` with a primitive default, `pipe` with validation, metadata,
 * `brand` and `readonly` actions), or `undefined` when some part is of another kind (transforms, `object`,
 * unions, async schemas, `fallback`, function or object defaults...): use `v.safeParse` then. Compiled once per
 * schema object: as generated code where the runtime compiles strings (Node, Bun, Deno), as closures on Workers.
 *
 * The check returns `true` when `v.safeParse(schema, value)` would succeed with an output deep-equal to `value`
 * after the check filled in defaults in place (key order may differ), so `value` must be the caller's own object,
 * such as a fresh `JSON.parse` result. On `false`, run `v.safeParse` for the issues (or the output, in the rare
 * case valibot accepts the value but outputs another one).
 *
 * @example
 * const check = compileCheck(transactionSettledSchema)
 * const event = JSON.parse(body)
 * const output = check?.(event) ? event : v.parse(transactionSettledSchema, event)
 */
export function compileCheck(schema: v.GenericSchema): ((value: unknown) => boolean) | undefined {
  let check = compiled.get(schema)
  if (check === undefined) {
    check = buildCheck(schema, 'generated') ?? buildCheck(schema, 'closures') ?? null
    compiled.set(schema, check)
  }
  return check ?? undefined
}
