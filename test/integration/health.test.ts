// webhooks.health(fresh) and the start-up check on real engines: Redis up, evicting, persistent, down and back; a Redis
// Cluster; PostgreSQL with each migration missing then applied, for the store and the dead-letter store; a
// database that cannot be reached; during close().
import { randomUUID } from 'node:crypto'
import { createWebhooks, type HealthCheck, type HealthReport } from '@payhooks/core'
import { postgresDeadLetterStore, postgresStore } from '@payhooks/postgres'
import { redisDeadLetterStore, redisStore } from '@payhooks/redis'
import { Cluster, Redis } from 'ioredis'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { recorder } from '../../packages/core/src/test-helpers/index.js'
import { freePort, ownRedis } from '../fixtures/own-redis.js'
import { databaseUrl, runMigration } from '../fixtures/postgres.js'

const secret = 'whsec_health_integration'
/** A check of the stores made afresh (results are shared for a second by default): these tests change the stores. */
const fresh = { maxAgeMs: 0 }
const check = (report: HealthReport, name: string) => report.checks.find((found) => found.name === name)
const failed = (report: HealthReport) => report.checks.filter((found) => !found.ok).map((found) => found.name)

async function eventually(predicate: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs
  while (!(await predicate())) {
    if (Date.now() > until) throw new Error('condition not met in time')
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

describe('health() on Redis', () => {
  it('is ready with Redis up, warns about no persistence and an evicting policy, fails while it is down', async () => {
    const server = await ownRedis()
    await server.start()
    const redis = new Redis(server.url, { maxRetriesPerRequest: 1, retryStrategy: () => 100 })
    try {
      const webhooks = createWebhooks({
        secret,
        store: redisStore(redis, { keyPrefix: `health:${randomUUID()}:` }),
        deadLetters: redisDeadLetterStore(redis, { keyPrefix: `{health-${randomUUID()}}:` }),
        checkAtStart: false,
      })
      const up = await webhooks.health(fresh)
      expect(up.ready).toBe(true)
      expect(check(up, 'redis')).toMatchObject({ ok: true, latencyMs: expect.any(Number) })
      expect(check(up, 'redis_maxmemory_policy')).toMatchObject({ ok: true, detail: 'noeviction' })
      expect(check(up, 'redis_persistence')).toMatchObject({ ok: false, severity: 'warning' })
      expect(check(up, 'redis_persistence')?.detail).toMatch(/^no persistence/)
      expect(check(up, 'dead_letter_redis')).toMatchObject({ ok: true })

      await redis.config('SET', 'maxmemory-policy', 'allkeys-lru')
      const evicting = await webhooks.health(fresh)
      expect(evicting.ready).toBe(true) // a warning
      expect(check(evicting, 'redis_maxmemory_policy')).toMatchObject({ ok: false, severity: 'warning' })
      expect(check(evicting, 'redis_maxmemory_policy')?.detail).toContain('maxmemory-policy is allkeys-lru')
      await redis.config('SET', 'maxmemory-policy', 'noeviction')

      await server.stop()
      const started = Date.now()
      const down = await webhooks.health({ timeoutMs: 3000 })
      expect(Date.now() - started).toBeLessThan(3000)
      expect(down.ready).toBe(false)
      expect(failed(down)).toEqual(['redis', 'dead_letter_redis'])
      expect(check(down, 'redis')?.fix).toMatch(/^start Redis/)
      expect(JSON.stringify(down)).not.toContain(server.url.split('//')[1])

      await server.start()
      await eventually(async () => (await webhooks.health(fresh)).ready)
      await webhooks.close()
    } finally {
      redis.disconnect()
      await server.dispose()
    }
  })

  it('reports an append-only file as persistence, and logs Redis down at start with the fix', async () => {
    const server = await ownRedis({ persistent: true })
    await server.start()
    const redis = new Redis(server.url, { maxRetriesPerRequest: 1 })
    try {
      const store = redisStore(redis, { keyPrefix: `health:${randomUUID()}:` })
      const webhooks = createWebhooks({ secret, store, checkAtStart: false })
      expect(check(await webhooks.health(fresh), 'redis_persistence')).toMatchObject({
        ok: true,
        detail: 'append-only file',
      })
      await server.stop()
      const { logger, calls } = recorder()
      const later = createWebhooks({ secret, store, logger })
      await eventually(async () => calls.length > 0)
      expect(calls[0]).toMatchObject({ level: 'error', fields: { code: 'health_check_failed', check: 'redis' } })
      expect(calls[0]?.message).toMatch(
        /^\[payhooks\] health check redis failed: Redis does not answer.*Fix: start Redis/,
      )
      await later.close()
      await webhooks.close()
    } finally {
      redis.disconnect()
      await server.dispose()
    }
  })

  it('checks every primary of a Redis Cluster', async () => {
    const nodes = (process.env.REDIS_CLUSTER_NODES ?? '').split(',').map((node) => {
      const [host, port] = node.split(':')
      return { host: host ?? '127.0.0.1', port: Number(port) }
    })
    expect(nodes.length).toBeGreaterThan(0)
    const cluster = new Cluster(nodes)
    try {
      const webhooks = createWebhooks({
        secret,
        store: redisStore(cluster, { keyPrefix: `health:${randomUUID()}:` }),
        checkAtStart: false,
      })
      const report = await webhooks.health(fresh)
      expect(report.ready).toBe(true)
      expect(check(report, 'redis')?.ok).toBe(true)
      expect(check(report, 'redis_maxmemory_policy')).toMatchObject({ ok: true, detail: 'noeviction' })
      const primaries = cluster.nodes('master')
      expect(primaries.length).toBe(3)
      await primaries[2]?.config('SET', 'maxmemory-policy', 'volatile-lru')
      try {
        expect(check(await webhooks.health(fresh), 'redis_maxmemory_policy')?.detail).toContain('volatile-lru')
      } finally {
        await primaries[2]?.config('SET', 'maxmemory-policy', 'noeviction')
      }
      await webhooks.close()
    } finally {
      cluster.disconnect()
    }
  })
})

describe('health() on PostgreSQL', () => {
  const url = databaseUrl()
  const admin = new pg.Pool({ connectionString: url, max: 2 })
  const pools: pg.Pool[] = []
  const schemas: string[] = []
  afterAll(async () => {
    for (const pool of pools) await pool.end()
    for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await admin.end()
  })
  const newSchema = async () => {
    const schema = `health_${randomUUID().replaceAll('-', '').slice(0, 12)}`
    await admin.query(`CREATE SCHEMA ${schema}`)
    schemas.push(schema)
    return schema
  }
  /** A pool whose search_path is `schema`, as a receiver deployed into that schema would have. */
  const poolIn = (schema: string) => {
    const pool = new pg.Pool({ connectionString: url, max: 3, options: `-c search_path=${schema}` })
    pools.push(pool)
    return pool
  }
  const migrationChecks = (report: HealthReport) =>
    report.checks
      .filter((found) => /_migration_/.test(found.name))
      .map(({ name, ok }: HealthCheck) => `${name}:${ok ? 'ok' : 'missing'}`)

  it('names each migration of the store and the dead-letter store missing, until it is applied', async () => {
    const schema = await newSchema()
    const pool = poolIn(schema)
    const { logger, calls } = recorder()
    const webhooks = createWebhooks({
      secret,
      store: postgresStore(pool, { createTable: false }),
      deadLetters: postgresDeadLetterStore(pool, { createTable: false }),
      logger,
    })
    const none = await webhooks.health(fresh)
    expect(none.ready).toBe(false)
    expect(check(none, 'postgres')).toMatchObject({ ok: true, latencyMs: expect.any(Number) })
    expect(migrationChecks(none)).toEqual([
      'postgres_migration_001:missing',
      'postgres_migration_004:missing',
      'postgres_migration_005:missing',
      'postgres_migration_006:missing',
      'postgres_migration_007:missing',
      'postgres_migration_012:missing',
      'dead_letter_postgres_migration_002:missing',
      'dead_letter_postgres_migration_003:missing',
      'dead_letter_postgres_migration_008:missing',
      'dead_letter_postgres_migration_010:missing',
      'dead_letter_postgres_migration_014:missing',
      'dead_letter_postgres_migration_015:missing',
    ])
    expect(check(none, 'dead_letter_postgres_migration_010')).toMatchObject({ severity: 'warning' })
    expect(check(none, 'postgres_migration_001')).toMatchObject({
      detail: 'table payhooks_events is missing: every delivery is refused 503',
      fix: 'apply sql/001_payhooks_events.sql of @payhooks/postgres',
    })
    // The start-up check logged the same, with the fix.
    await eventually(async () => calls.length >= 5)
    expect(
      calls.filter((call) => call.level === 'error').map((call) => (call.fields as { check: string }).check),
    ).toEqual(['postgres_migration_001', 'dead_letter_postgres_migration_002', 'dead_letter_postgres_migration_003'])
    expect(calls[0]?.message).toContain('Fix: apply sql/001_payhooks_events.sql of @payhooks/postgres')

    await runMigration(admin, schema, '001_payhooks_events.sql')
    const first = await webhooks.health(fresh)
    expect(migrationChecks(first).slice(0, 3)).toEqual([
      'postgres_migration_001:ok',
      'postgres_migration_004:missing',
      'postgres_migration_005:missing',
    ])
    expect(check(first, 'postgres_migration_004')).toMatchObject({ severity: 'warning' })
    await runMigration(admin, schema, '002_payhooks_dead_letters.sql')
    const second = await webhooks.health(fresh)
    expect(second.ready).toBe(false)
    expect(failed(second).filter((name) => name.startsWith('dead_letter'))).toEqual([
      'dead_letter_postgres_migration_003',
      'dead_letter_postgres_migration_008',
      'dead_letter_postgres_migration_010',
      'dead_letter_postgres_migration_014',
      'dead_letter_postgres_migration_015',
    ])
    expect(check(second, 'dead_letter_postgres_migration_008')).toMatchObject({
      severity: 'warning',
      detail:
        'index payhooks_dead_letters_code_idx on payhooks_dead_letters is missing: counts and pages of letters by code or event type read the whole table',
    })
    await runMigration(admin, schema, '003_payhooks_dead_letters_stale_event.sql')
    expect((await webhooks.health(fresh)).ready).toBe(true) // 004 to 008, 010, 012, 014 and 015 missing are warnings
    await runMigration(admin, schema, '010_payhooks_dead_letters_kept_counts.sql')
    await runMigration(admin, schema, '004_payhooks_events_body_digest.sql')
    await runMigration(admin, schema, '005_payhooks_events_fences.sql')
    expect(migrationChecks(await webhooks.health(fresh)).slice(0, 4)).toEqual([
      'postgres_migration_001:ok',
      'postgres_migration_004:ok',
      'postgres_migration_005:ok',
      'postgres_migration_006:missing',
    ])
    await runMigration(admin, schema, '006_payhooks_events_fence_token.sql')
    expect(migrationChecks(await webhooks.health(fresh))[4]).toBe('postgres_migration_007:missing')
    await runMigration(admin, schema, '007_payhooks_events_held_keys.sql')
    await runMigration(admin, schema, '008_payhooks_dead_letters_counts.sql')
    await runMigration(admin, schema, '014_payhooks_dead_letters_created.sql')
    await runMigration(admin, schema, '015_payhooks_dead_letters_paused.sql')
    expect(failed(await webhooks.health(fresh))).toEqual(['postgres_migration_012'])
    await runMigration(admin, schema, '012_payhooks_sweep_indexes.sql')
    const all = await webhooks.health(fresh)
    expect(failed(all)).toEqual([])
    const closing = webhooks.close()
    const during = await webhooks.health(fresh)
    expect(during.ready).toBe(false)
    expect(failed(during)).toEqual(['closing'])
    await closing
  })

  it('does not count a table init() will create as missing (createTable, the default)', async () => {
    const schema = await newSchema()
    const webhooks = createWebhooks({ secret, store: postgresStore(poolIn(schema)), checkAtStart: false })
    const report = await webhooks.health(fresh)
    expect(report.ready).toBe(true)
    expect(check(report, 'postgres_migration_001')?.detail).toMatch(/init\(\) applies 001_payhooks_events.sql/)
    await webhooks.close()
  })

  it('fails, within the bound and without the connection string, when PostgreSQL cannot be reached', async () => {
    const port = await freePort()
    const pool = new pg.Pool({
      connectionString: `postgres://payhooks:s3cr3t-pw@127.0.0.1:${port}/nowhere`,
      connectionTimeoutMillis: 500,
    })
    pools.push(pool)
    const webhooks = createWebhooks({ secret, store: postgresStore(pool, { createTable: false }), checkAtStart: false })
    const report = await webhooks.health({ timeoutMs: 2000 })
    expect(report.ready).toBe(false)
    expect(failed(report)).toEqual(['postgres'])
    expect(check(report, 'postgres')?.detail).toMatch(/^PostgreSQL does not answer/)
    expect(JSON.stringify(report)).not.toMatch(/s3cr3t|nowhere|payhooks:/)
    await webhooks.close()
  })
})
