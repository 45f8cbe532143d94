import type { Cluster, Redis } from 'ioredis'
import type { ConnectionDeadline } from './connection.js'

// A rolling upgrade from layout 1 (one key per event holding its claim, then `done[:digest]` for the retention; marks
// in the fence hash). Layout 2 reads layout 1 everywhere it looks: the event's own key is still the claim's (so a
// claim of either release excludes the other), a `done` in it is still a done marker, and a layout-1 mark in the fence
// hash still orders. Layout 1 reads only its own keys, so while its instances may still run, a layout-2 instance also
// leaves what they read: the event's key turned into `done[:digest]` instead of deleted, the mark also in the fence
// hash, both kept until the rollout window ends (not the retention: no layout-1 instance runs past it). Layout 1's
// keys expire with their retention.
//
// `<prefix>layout` says which: `2:<ms>` when the first layout-2 instance of the prefix started, finding layout-1
// keys (the window runs `rolloutMs` from then), `2:0` when it found none (a new deployment: no window).

/** How many keys the search for layout-1 keys looks at on each server before giving up and assuming some. */
const SCAN_LIMIT = 20_000

const glob = (text: string) => text.replace(/[*?[\]\\]/g, (c) => `\\${c}`)

/** Whether `node` holds a key under `prefix` other than `layoutKey`; undefined if it could not tell within the limit. */
async function holdsKeys(node: Redis, prefix: string, layoutKey: string): Promise<boolean | undefined> {
  let cursor = '0'
  let seen = 0
  do {
    const [next, keys] = await node.scan(cursor, 'MATCH', `${glob(prefix)}*`, 'COUNT', 1000)
    if (keys.some((key) => key !== layoutKey)) return true
    cursor = next
    seen += 1000
  } while (cursor !== '0' && seen < SCAN_LIMIT)
  return cursor === '0' ? false : undefined
}

/** The rollout window of a store's prefix: `bridgeMs()` is how long what layout 1 reads must still be kept (0: none). */
export function rollout(client: Redis | Cluster, keyPrefix: string, rolloutMs: number, deadline: ConnectionDeadline) {
  const layoutKey = `${keyPrefix}layout`
  const clientPrefix = (client as { options?: { keyPrefix?: string } }).options?.keyPrefix ?? ''
  let since: number | undefined
  let pending: Promise<void> | undefined

  async function read(): Promise<void> {
    const call = <T>(send: () => Promise<T>) => deadline.call(send, 'init got no reply from Redis')
    let value = await call(() => client.get(layoutKey))
    if (value === null) {
      // The Cluster's primaries once it is ready (call waits for it): before, the client may know none.
      const found = await call(() => {
        const nodes = (client as Cluster).isCluster ? (client as Cluster).nodes('master') : [client as Redis]
        if (nodes.length === 0) return Promise.resolve([undefined])
        return Promise.all(nodes.map((node) => holdsKeys(node, clientPrefix + keyPrefix, clientPrefix + layoutKey)))
      })
      const layout1 = found.some((held) => held !== false)
      await call(() => client.set(layoutKey, `2:${layout1 ? Date.now() : 0}`, 'NX'))
      value = await call(() => client.get(layoutKey))
    }
    since = Number(/^2:(\d+)$/.exec(value ?? '')?.[1] ?? Date.now())
  }

  return {
    /** Reads (or, for the first layout-2 instance, writes) the prefix's layout; once, again only after a failure. */
    ready(): Promise<void> {
      if (since !== undefined) return Promise.resolve()
      pending ??= read().finally(() => {
        pending = undefined
      })
      return pending
    },
    bridgeMs(): number {
      if (!since) return 0
      const left = since + rolloutMs - Date.now()
      return left > 0 ? Math.ceil(left) : 0
    },
  }
}
