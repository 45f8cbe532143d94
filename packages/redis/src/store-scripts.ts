import {
  CLUSTER_CLAIM_STEPS,
  CLUSTER_HOLDER_STEPS,
  FENCE_KEYS,
  FENCE_LUA,
  FENCE_NAMES,
  fenceSetup,
  LEAVE_CALL,
  RENEW_CALL,
  TAKE_ARGS,
  TAKE_CALL,
} from './fences.js'
import type { Library, LibraryFunction } from './functions.js'
import { CLOCK_LUA } from './held-keys.js'
import { GENERATIONS_LUA, MARKERS_LUA } from './layout.js'
import { shake } from './lua.js'

// The store's scripts (layout 2, layout.ts). The event's own key `<prefix><event id>` holds its claim while one is
// in progress, its value the claim token, which carries the body digest after a ':' (`<prefix>.<n>:<digest>`); owner
// tokens always contain a '.' before any ':', so they never start with `done`. Once handled, the event is a field of
// its generation's hash (the done marker) and its own key is deleted (or, while layout-1 instances may run, turned
// into layout 1's `done[:digest]` until the rollout window ends: upgrade.ts). A `done` value in the event's key is a
// layout-1 done marker, still a duplicate.

/** The steps of a claim on the event's key alone (the local `event`). */
const HOLD_LUA = `
local function extendEvent(token, lease)
  if redis.call('GET', event) == token then return redis.call('PEXPIRE', event, lease) end
  return 0
end

local function releaseEvent(token)
  if redis.call('GET', event) == token then return redis.call('DEL', event) end
  return 0
end
`

/** A claim and done marker (the locals `event`, `dgens`, `dwrite`); a marker's value (digest bytes) read as hex. */
const DONE_LUA = `${HOLD_LUA}
local function hex(v)
  return string.format(string.rep('%02x', #v), string.byte(v, 1, -1))
end

-- The event's key taken, or its state: a layout-1 marker 'done[:digest]', a live claim {lease left, digest or false}.
-- Without claimEvent's read before it, the done marker is read by the client after it (claim.ts), in the same write.
local function takeEvent(token, lease)
  if redis.call('SET', event, token, 'NX', 'PX', lease) then return nil end
  local value = redis.call('GET', event)
  if value == 'done' or string.sub(value, 1, 5) == 'done:' then return value end
  return {redis.call('PTTL', event), string.match(value, ':(.*)$') or false}
end

-- The event's state before a claim: its done marker {'d', hex digest}, takeEvent's answer, or nothing once this claim
-- took the event's key.
local function claimEvent(token, lease, field, h, gen)
  local v, _, hint = findMarker(dbase, field, h, gen)
  if v then return {'d', hex(v)} end
  local state = takeEvent(token, lease)
  if state then return state end
  return nil, hint
end

local function completeEvent(token, field, value, h, gen, expireAt, countsAt, min, bridge, hint)
  if redis.call('GET', event) ~= token then return 0 end
  local dwrite = markerTarget(dbase, h, gen, min, countsAt, hint)
  appendedTo(dwrite, redis.call('APPEND', dwrite, field .. value), expireAt)
  if bridge ~= '0' then
    redis.call('SET', event, 'done' .. (string.match(token, ':.*$') or ''), 'PX', bridge)
  else
    redis.call('DEL', event)
  end
  return 1
end

`

/** The event's key, then its markers' hash without the generation, from KEYS[first]. */
const eventSetup = (first: number) => `event, dbase = KEYS[${first}], KEYS[${first + 1}]`

/** Keys of an event's scripts: its own key, then its markers' hash without the generation. */
export const EVENT_KEYS = 2

/**
 * One step of the store in Lua: `setup` assigns the shared locals its helpers read (`event`, `dbase` and FENCE_NAMES)
 * from KEYS and ARGV, `body` runs. A step runs as a script of its own (`EVAL`: the helpers it calls, shaken, are
 * compiled into it) or as a function of the store's library (functions.ts: the helpers defined once when loaded).
 */
export interface Step {
  readonly setup: string
  readonly body: string
}

// ARGV of the claim: claim token, lease, marker field (its first 32 bits pick the bucket), generation; its answer once
// claimed is the generation's count value (0: none yet), which the complete takes back as a hint (markerTarget,
// layout.ts; FAST_COMPLETE_SCRIPT). Of complete: claim token, marker field and value, the 32 bits, generation, its
// expiry, the counts' expiry, the first bucket count, the bridge (upgrade.ts), the hint.
const CLAIM_STEP: Step = {
  setup: eventSetup(1),
  body: `local state, hint = claimEvent(ARGV[1], ARGV[2], ARGV[3], struct.unpack('>I4', ARGV[3]), tonumber(ARGV[4]))
return state or hint`,
}
const EVENT_HOLDER_STEPS = {
  payhooksComplete: {
    setup: eventSetup(1),
    body: `return completeEvent(ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6], ARGV[7], ARGV[8],
  ARGV[9], tonumber(ARGV[10]))`,
  },
}

/**
 * The complete of a claim whose generation's count value it read (the hint): the client names the marker's hash (the
 * hint's top level), so no counts are read and no number formatted, a third of the full script's cost. KEYS: the
 * event's key, the hash; ARGV: claim token, the marker's record (field and value), the generation's expiry. Not used
 * while the rollout window is open (the bridge).
 */
const FAST_COMPLETE_STEP: Step = {
  setup: 'event = KEYS[1]',
  body: `if redis.call('GET', event) ~= ARGV[1] then return 0 end
appendedTo(KEYS[2], redis.call('APPEND', KEYS[2], ARGV[2]), ARGV[3])
redis.call('DEL', event)
return 1`,
}

/** Extend and release: KEYS the event's key alone; ARGV the claim token, then the lease. */
const HOLD_STEPS = {
  payhooksExtend: { setup: 'event = KEYS[1]', body: 'return extendEvent(ARGV[1], ARGV[2])' },
  payhooksRelease: { setup: 'event = KEYS[1]', body: 'return releaseEvent(ARGV[1])' },
}

// On standalone Redis an ordered event's fence goes with its claim, in one script per step (KEYS: the event's, then
// the fence's): the claim takes the fence (or gives the claim back when another holds it), complete moves the mark,
// frees the fence and writes the done marker, release frees both. Two round trips per event, as an unordered one; on
// a Cluster, four (fences.ts). ARGV: for the claim the first TAKE_ARGS of fenceArgs (fences.ts) and the marker's
// field; for complete fenceArgs, the marker's field and value (the id hash's 32 bits are the field's first four
// bytes), the counts' expiry, the first bucket count (the marker's generation and expiry are the mark's) and the hint
// (the claim's answer when taken carries it fourth); release and extend take fenceArgs alone. Each argument costs a
// script about 1,000 instructions and each `tonumber` 2,000, so numbers used only on a rare path (the first bucket
// count, the bridge) stay text until then.
const orderedSetup = `${eventSetup(1)}\n${fenceSetup(1 + EVENT_KEYS)}`
export const ORDERED_KEYS = EVENT_KEYS + FENCE_KEYS
const ORDERED_CLAIM_STEP: Step = {
  setup: orderedSetup,
  body: `local state, hint = claimEvent(ARGV[1], ARGV[2], ARGV[${TAKE_ARGS + 1}], struct.unpack('>I4', ARGV[${TAKE_ARGS + 1}]), gen)
if state then return state end
local taken = ${TAKE_CALL}
if taken[1] == 'b' then redis.call('DEL', event) else taken[4] = hint end
return taken`,
}

/**
 * The ordered claim of a Redis with Functions: the event's key and the fence taken as ORDERED_CLAIM_STEP takes them,
 * without its done marker's read, which the client makes with an `MGET` sent in the same write, after it (claim.ts):
 * a string of records pushed into Lua cost a script about 25,000 instructions a generation. KEYS and ARGV: those of
 * ORDERED_CLAIM_STEP less the marker's field.
 */
const ORDERED_TAKE_STEP: Step = {
  setup: orderedSetup,
  body: `local state = takeEvent(ARGV[1], ARGV[2])
if state then return state end
local taken = ${TAKE_CALL}
if taken[1] == 'b' then redis.call('DEL', event) end
return taken`,
}

/** The steps of a claim already taken, which a full Redis still runs (allow-oom.ts); a claim's own are refused. */
const ORDERED_HOLDER_STEPS = {
  payhooksOrderedComplete: {
    setup: orderedSetup,
    body: `${LEAVE_CALL}
return completeEvent(ARGV[1], ARGV[11], ARGV[12], struct.unpack('>I4', ARGV[11]), gen, ARGV[9], ARGV[13], ARGV[14],
  ARGV[10], tonumber(ARGV[15]))`,
  },
  payhooksOrderedRelease: { setup: orderedSetup, body: `${LEAVE_CALL}\nreturn releaseEvent(ARGV[1])` },
  payhooksOrderedExtend: { setup: orderedSetup, body: `${RENEW_CALL}\nreturn extendEvent(ARGV[1], ARGV[2])` },
}

/** Every helper of the store's steps, in the order they refer to each other, after the shared locals. */
const HELPERS = `${CLOCK_LUA}${GENERATIONS_LUA}${MARKERS_LUA}${DONE_LUA}${FENCE_LUA}`
const DECLARE = `local event, dbase, ${FENCE_NAMES}\n`

const script = ({ setup, body }: Step) => shake(`${DECLARE}${setup}\n${HELPERS}\n${body}`)
const scripts = <K extends string>(steps: Record<K, Step>) =>
  Object.fromEntries(Object.entries<Step>(steps).map(([name, step]) => [name, script(step)])) as Record<K, string>

export const CLAIM_SCRIPT = script(CLAIM_STEP)
export const FAST_COMPLETE_SCRIPT = script(FAST_COMPLETE_STEP)
export const EVENT_HOLDER_SCRIPTS = scripts(EVENT_HOLDER_STEPS)
export const HOLD_SCRIPTS = scripts(HOLD_STEPS)
export const ORDERED_CLAIM_SCRIPT = script(ORDERED_CLAIM_STEP)
export const ORDERED_HOLDER_SCRIPTS = scripts(ORDERED_HOLDER_STEPS)
export const CLUSTER_CLAIM_SCRIPTS = scripts(CLUSTER_CLAIM_STEPS)
export const CLUSTER_HOLDER_SCRIPTS = scripts(CLUSTER_HOLDER_STEPS)

/**
 * The store's library of Redis 7 Functions (functions.ts): each step that runs on every event or renewal, the helpers
 * defined once, when the library is loaded, instead of on every call of a script (a `local function` costs a script
 * about 700 instructions a call: an ordered claim defined 16 and its complete 19). `live`, the marks' generations a
 * step read (GENERATIONS_LUA), is forgotten at each call. Holder steps run on a full Redis too (allow-oom.ts).
 */
export const STORE_LIBRARY: Library = {
  shared: `${DECLARE}${HELPERS}`,
  reset: 'live = nil',
  functions: {
    payhooksCompleteFast: { ...FAST_COMPLETE_STEP, numberOfKeys: 2, allowOom: true },
    ...holders(EVENT_HOLDER_STEPS, EVENT_KEYS),
    ...holders(HOLD_STEPS, 1),
    payhooksOrderedClaim: { ...ORDERED_CLAIM_STEP, numberOfKeys: ORDERED_KEYS, allowOom: false },
    payhooksOrderedTake: { ...ORDERED_TAKE_STEP, numberOfKeys: ORDERED_KEYS, allowOom: false },
    ...holders(ORDERED_HOLDER_STEPS, ORDERED_KEYS),
    payhooksFenceTake: { ...CLUSTER_CLAIM_STEPS.payhooksFenceTake, numberOfKeys: FENCE_KEYS, allowOom: false },
    ...holders(CLUSTER_HOLDER_STEPS, FENCE_KEYS),
  },
}

function holders(steps: Record<string, Step>, numberOfKeys: number): Record<string, LibraryFunction> {
  return Object.fromEntries(
    Object.entries(steps).map(([name, step]) => [name, { ...step, numberOfKeys, allowOom: true }]),
  )
}
