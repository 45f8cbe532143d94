import * as v from 'valibot'
import { type Check, INVALID, isPrimitive, mayOwnUncopied, type Part, UNCOPIED } from './part.js'

const EMPTY: Readonly<Record<string, (value: unknown) => boolean>> = {
  optional: (value) => value === undefined,
  nullable: (value) => value === null,
  nullish: (value) => value == null,
  exact_optional: () => false,
}

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

export function compile(schema: Part): Check | undefined {
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
