import type * as v from 'valibot'

/** What valibot would output for `value`: `value` itself (filled in place), a replacement, or `INVALID`. */
export type Check = (value: unknown) => unknown

/** The parts of a valibot schema or action the compiler reads. */
export interface Part {
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

export const INVALID = Symbol('invalid')
/** Own keys looseObject does not copy to its output (valibot's `_isValidObjectKey`). */
export const UNCOPIED = ['__proto__', 'prototype', 'constructor']

/** Whether `object` may own a key of `UNCOPIED`: faster than `Object.hasOwn`, exact for objects of `JSON.parse`. */
export const mayOwnUncopied = (object: { constructor?: unknown; prototype?: unknown; __proto__?: unknown }) =>
  object.constructor !== Object ||
  object.prototype !== undefined ||
  // biome-ignore lint/suspicious/noProto: reads an own `__proto__` key of parsed JSON, or else the prototype
  object.__proto__ !== Object.prototype

export const isPrimitive = (value: unknown) =>
  value === null || (typeof value !== 'object' && typeof value !== 'function')
