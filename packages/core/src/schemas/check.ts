import type * as v from 'valibot'
import { compile } from './check/closures.js'
import { generateCheck } from './check/generated.js'
import type { Part } from './check/part.js'

// The checks are built in schema-check/: as closures (closures.ts) or as generated code (generated.ts), from the
// parts of a schema both read (part.ts).

const compiled = new WeakMap<object, ((value: unknown) => boolean) | null>()

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
