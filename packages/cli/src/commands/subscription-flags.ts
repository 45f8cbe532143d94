import { type Context, UsageError } from '../context.js'
import { checkEventTypes } from '../event-types.js'

/** `--event-type a --event-type b,c` → `['a', 'b', 'c']`, checked against the spec's names. */
export function eventTypes(ctx: Context): string[] | undefined {
  const raw = ctx.values['event-type']
  if (raw === undefined) return undefined
  const list = (Array.isArray(raw) ? raw : [raw])
    .flatMap((item) => String(item).split(','))
    .map((item) => item.trim())
    .filter((item) => item !== '')
  if (list.length === 0) throw new UsageError('--event-type needs at least one event type')
  checkEventTypes(ctx, list)
  return list
}

export function activeFlag(ctx: Context): boolean | undefined {
  const active = ctx.values.active === true
  const inactive = ctx.values.inactive === true
  if (active && inactive) throw new UsageError('--active and --inactive exclude each other')
  return active ? true : inactive ? false : undefined
}
