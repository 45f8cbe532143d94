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

/**
 * The checks of a store on Redis, named `<name>`, `<name>_maxmemory_policy` and `<name>_persistence`: PING and
 * its latency; on every primary, that Redis may not evict keys (anything but `noeviction` may drop done markers
 * or letters when memory runs out, so an event runs twice or a letter is lost) and that it persists them (AOF;
 * snapshots only lose the last minutes; neither loses everything at a restart). The settings are warnings.
 */
export async function redisHealth(
  client: Redis | Cluster,
  { call }: ConnectionDeadline,
  name: string,
  what: string,
  /** What an evicted key loses, for the `maxmemory-policy` check. */
  evicted = 'a done marker lost runs an event twice; a letter lost is an event lost',
): Promise<HealthCheck[]> {
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
