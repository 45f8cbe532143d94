import type { HealthCheck } from '@payhooks/core'
import type { Cluster, Redis } from 'ioredis'
import type { ConnectionDeadline } from './connection.js'

type Node = Pick<Redis, 'config' | 'info'>

/** `field:value` of an INFO section. */
function infoField(info: string, field: string): string | undefined {
  return new RegExp(`^${field}:(.*)$`, 'm').exec(info)?.[1]?.trim()
}

/** One node's `maxmemory-policy`: CONFIG GET, else INFO memory (CONFIG is often renamed or disabled). */
async function policyOf(node: Node, call: ConnectionDeadline['call']): Promise<string | undefined> {
  try {
    const reply = (await call(() => node.config('GET', 'maxmemory-policy'), 'CONFIG GET got no reply')) as string[]
    if (typeof reply[1] === 'string') return reply[1]
  } catch {}
  try {
    return infoField(await call(() => node.info('memory'), 'INFO got no reply'), 'maxmemory_policy')
  } catch {
    return undefined
  }
}

/** One node's persistence: `aof`, `rdb` (snapshots only), `none`, or undefined when it cannot be told. */
async function persistenceOf(node: Node, call: ConnectionDeadline['call']): Promise<string | undefined> {
  let info: string
  try {
    info = await call(() => node.info('persistence'), 'INFO got no reply')
  } catch {
    return undefined
  }
  if (infoField(info, 'aof_enabled') === '1') return 'aof'
  try {
    const reply = (await call(() => node.config('GET', 'save'), 'CONFIG GET got no reply')) as string[]
    return typeof reply[1] === 'string' && reply[1].trim() !== '' ? 'rdb' : 'none'
  } catch {
    return undefined // CONFIG renamed or disabled: snapshots cannot be told apart from none
  }
}

/** One node's `used_memory` and `maxmemory` (0: no limit), from INFO memory; undefined when INFO is refused. */
async function memoryOf(
  node: Node,
  call: ConnectionDeadline['call'],
): Promise<{ used: number; max: number } | undefined> {
  try {
    const info = await call(() => node.info('memory'), 'INFO got no reply')
    const used = Number(infoField(info, 'used_memory'))
    const max = Number(infoField(info, 'maxmemory') ?? 0)
    return Number.isFinite(used) && Number.isFinite(max) ? { used, max } : undefined
  } catch {
    return undefined
  }
}

/** From this share of `maxmemory` the memory check warns; from {@link MEMORY_ERROR} it fails readiness. */
export const MEMORY_WARNING = 0.8
export const MEMORY_ERROR = 0.95
/** An OOM refusal this recent fails readiness: Redis refuses claims, so every delivery is answered 503. */
export const OOM_RECENT_MS = 10_000

const megabytes = (bytes: number) => `${(bytes / 1_048_576).toFixed(1)} MB`

/** The `<name>_memory` check: the fullest primary's `used_memory` against its `maxmemory`, and recent OOM refusals. */
async function memoryCheck(
  nodes: Node[],
  deadline: ConnectionDeadline,
  name: string,
  what: string,
): Promise<HealthCheck> {
  const check = `${name}_memory`
  const fix = `raise maxmemory, or free memory: a Redis of ${what}'s own, a shorter retention, fewer dead letters`
  const oomAt = deadline.lastOomAt?.()
  const sinceOom = oomAt === undefined ? Number.POSITIVE_INFINITY : Date.now() - oomAt
  if (sinceOom < OOM_RECENT_MS) {
    return {
      name: check,
      ok: false,
      severity: 'error',
      detail: `Redis refused a write for lack of memory (OOM) ${Math.round(sinceOom / 1000)} s ago: ${what} cannot take claims (503)`,
      fix,
    }
  }
  const memories = await Promise.all(nodes.map((node) => memoryOf(node, deadline.call)))
  let fullest: { used: number; max: number } | undefined
  let unlimited: { used: number; max: number } | undefined
  for (const memory of memories) {
    if (memory === undefined) continue
    if (memory.max <= 0) unlimited ??= memory
    else if (fullest === undefined || memory.used / memory.max > fullest.used / fullest.max) fullest = memory
  }
  if (fullest === undefined) {
    return unlimited === undefined
      ? { name: check, ok: false, severity: 'warning', detail: 'memory could not be read (INFO refused)' }
      : { name: check, ok: true, severity: 'warning', detail: `${megabytes(unlimited.used)} used, no maxmemory set` }
  }
  const share = fullest.used / fullest.max
  const detail = `${megabytes(fullest.used)} used of maxmemory ${megabytes(fullest.max)} (${Math.round(share * 100)}%)`
  if (share >= MEMORY_ERROR) {
    return {
      name: check,
      ok: false,
      severity: 'error',
      detail: `${detail}: Redis is about to refuse claims (OOM)`,
      fix,
    }
  }
  if (share >= MEMORY_WARNING) return { name: check, ok: false, severity: 'warning', detail, fix }
  return { name: check, ok: true, severity: 'warning', detail }
}

/**
 * The checks of a store on Redis, named `<name>`, `<name>_memory`, `<name>_maxmemory_policy` and
 * `<name>_persistence`: PING and its latency; its memory against `maxmemory` (a warning from 80%, an error from
 * 95% or after an OOM refusal in the last 10 s, so readiness turns 503 while Redis refuses claims);
 * its latency; on every primary, that Redis may not evict keys (anything but `noeviction` may drop done markers
 * or letters when memory runs out, so an event runs twice or a letter is lost) and that it persists them (AOF;
 * snapshots only lose the last minutes; neither loses everything at a restart). The settings are warnings.
 */
export async function redisHealth(
  client: Redis | Cluster,
  deadline: ConnectionDeadline,
  name: string,
  what: string,
  /** What an evicted key loses, for the `maxmemory-policy` check. */
  evicted = 'a done marker lost runs an event twice; a letter lost is an event lost',
): Promise<HealthCheck[]> {
  const { call } = deadline
  const started = performance.now()
  try {
    await call(() => client.ping(), 'PING got no reply from Redis')
  } catch {
    return [
      {
        name,
        ok: false,
        detail: `Redis does not answer: ${what} refuses deliveries (503)`,
        fix: 'start Redis, or check the address and credentials the ioredis client was given',
      },
    ]
  }
  const checks: HealthCheck[] = [{ name, ok: true, latencyMs: Math.round((performance.now() - started) * 10) / 10 }]
  const nodes: Node[] = 'nodes' in client && typeof client.nodes === 'function' ? client.nodes('master') : [client]
  checks.push(await memoryCheck(nodes, deadline, name, what))
  const policies = await Promise.all(nodes.map((node) => policyOf(node, call)))
  const evicting = policies.find((policy) => policy !== undefined && policy !== 'noeviction')
  const unknownPolicy = policies.some((policy) => policy === undefined)
  checks.push(
    evicting !== undefined
      ? {
          name: `${name}_maxmemory_policy`,
          ok: false,
          severity: 'warning',
          detail: `maxmemory-policy is ${evicting}: when memory runs out Redis may evict ${what}'s keys (${evicted})`,
          fix: 'set maxmemory-policy noeviction (redis.conf or CONFIG SET), or give payhooks a Redis of its own',
        }
      : unknownPolicy
        ? {
            name: `${name}_maxmemory_policy`,
            ok: false,
            severity: 'warning',
            detail: 'maxmemory-policy could not be read (CONFIG and INFO refused)',
            fix: 'make sure maxmemory-policy is noeviction',
          }
        : { name: `${name}_maxmemory_policy`, ok: true, severity: 'warning', detail: 'noeviction' },
  )
  const persistence = await Promise.all(nodes.map((node) => persistenceOf(node, call)))
  const worst = persistence.includes('none')
    ? 'none'
    : persistence.includes(undefined)
      ? undefined
      : persistence.includes('rdb')
        ? 'rdb'
        : 'aof'
  const fix = 'turn on the append-only file (appendonly yes, appendfsync everysec)'
  checks.push(
    worst === 'aof'
      ? { name: `${name}_persistence`, ok: true, severity: 'warning', detail: 'append-only file' }
      : worst === 'rdb'
        ? {
            name: `${name}_persistence`,
            ok: true,
            severity: 'warning',
            detail: 'snapshots only: a crash forgets the writes since the last one',
            fix,
          }
        : {
            name: `${name}_persistence`,
            ok: false,
            severity: 'warning',
            detail:
              worst === 'none'
                ? `no persistence: a Redis restart forgets all of ${what}'s keys`
                : 'persistence could not be read (INFO or CONFIG refused)',
            fix,
          },
  )
  return checks
}
