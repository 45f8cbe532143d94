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

/**
 * A check of `value` against `schema` that builds no copy of it, for the schema kinds the built-in schemas use
 * (`looseObject`, `string`, `number`, `boolean`, `null`, `literal`, `picklist`, `custom`, `unknown`, `any`,
 * `optional`/`exactOptional`/`nullable`/`nullish` with a primitive default, `pipe` with validation, metadata,
 * `brand` and `readonly` actions), or `undefined` when some part is of another kind (transforms, `object`,
 * unions, async schemas, `fallback`, function or object defaults...): use `v.safeParse` then. Compiled once per
 * schema object.
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
    const root = compile(schema as unknown as Part)
    check = root ? (value) => root(value) === value : null
    compiled.set(schema, check)
  }
  return check ?? undefined
}
