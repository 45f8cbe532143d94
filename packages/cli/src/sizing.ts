// What a fleet keeps, from the benches' figures: the one place they live. `payhooks size` prints an estimate from them
// and the table of docs/guide/capacity.md is this module's `sizingTable()` (a test checks it; after changing a figure,
// `node scripts/sizing-table.mjs` writes the table again).

/** The backings `payhooks size` estimates. */
export type SizingStore = 'redis' | 'postgres'

/** Bytes a backing keeps per event for the store's retention, and per journal answer for the journal's. */
export interface StoreBytes {
  /** A handled event without an ordering key: its done marker. */
  readonly unordered: number
  /** A handled event with an ordering key of its own (the worst case): its done marker and the key's fence. */
  readonly ordered: number
  /** One answer in the journal. */
  readonly journalAnswer: number
  /** Where the figures come from. */
  readonly source: string
}

/**
 * Redis's done markers and marks as `bench/redis-storage` measured them (layout 2, issue 49: records of shared strings
 * and fields of shared hashes; 40,000 events, Redis 7.0 defaults), while their generation lives.
 */
export const REDIS_MEASURED = { unordered: 41, ordered: 124 } as const
/**
 * How much longer than the retention Redis keeps a marker on average: a generation's keys expire whole a retention
 * after its newest event, so a marker lives 1 to 1.25 retentions (docs/guide/stores.md).
 */
export const GENERATION_LIFE = 1.125

/**
 * Bytes per event and per journal answer, as the benches measured them. Redis: `used_memory` grown
 * (`bench/redis-storage.bench.mjs`, `bench/redis-journal-storage.bench.mjs`, 40,000 events, Redis 7.0 defaults), the
 * markers' times {@link GENERATION_LIFE}. PostgreSQL: `pg_total_relation_size` grown after `VACUUM`
 * (`bench/postgres-storage.bench.mjs`, tables and indexes; `bench/journal.bench.mjs` for the journal's table).
 */
export const BYTES: Readonly<Record<SizingStore, StoreBytes>> = {
  redis: {
    unordered: Math.round(REDIS_MEASURED.unordered * GENERATION_LIFE),
    ordered: Math.round(REDIS_MEASURED.ordered * GENERATION_LIFE),
    journalAnswer: 118,
    source:
      'bench/redis-storage (41 B and 124 B, x1.125 for generations outliving their events), bench/redis-journal-storage (used_memory grown, Redis 7.0 defaults)',
  },
  postgres: {
    unordered: 315,
    ordered: 691,
    journalAnswer: 330,
    source: 'bench/postgres-storage, bench/journal (tables and indexes after VACUUM)',
  },
}

/** The store's default retention of done markers and fences: the service's 72 hours of retries and one more. */
export const DEFAULT_RETENTION_HOURS = 73
/** The journal's default retention. */
export const DEFAULT_JOURNAL_DAYS = 7

/** What {@link estimate} is asked. */
export interface SizingQuery {
  store: SizingStore
  /** Events handled per second. */
  rate: number
  ordered: boolean
  journal: boolean
  /** @default 73 */
  retentionHours?: number
  /** @default 7 */
  journalDays?: number
  /** Journal answers per event (a first delivery handled: 1; retries and copies add theirs). @default 1 */
  answersPerEvent?: number
}

/** An estimate in bytes. */
export interface Sizing {
  store: SizingStore
  /** Done markers (and fences, ordered) kept for the retention. */
  markers: number
  /** Journal answers kept for the journal's retention; 0 without a journal. */
  journal: number
  total: number
  perEvent: number
  perAnswer: number
}

/** What a fleet handling `rate` events a second keeps. */
export function estimate(query: SizingQuery): Sizing {
  const bytes = BYTES[query.store]
  const perEvent = query.ordered ? bytes.ordered : bytes.unordered
  const markers = query.rate * (query.retentionHours ?? DEFAULT_RETENTION_HOURS) * 3600 * perEvent
  const journal = query.journal
    ? query.rate *
      (query.answersPerEvent ?? 1) *
      (query.journalDays ?? DEFAULT_JOURNAL_DAYS) *
      86_400 *
      bytes.journalAnswer
    : 0
  return { store: query.store, markers, journal, total: markers + journal, perEvent, perAnswer: bytes.journalAnswer }
}

/** Bytes as GB (10^9), to two significant digits under 10, else whole. */
export function gigabytes(bytes: number): string {
  const gb = bytes / 1e9
  if (gb >= 10) return `${Math.round(gb).toLocaleString('en')} GB`
  if (gb >= 0.1) return `${gb.toFixed(1)} GB`
  return `${gb.toFixed(2)} GB`
}

const RATES = [10, 50, 100, 500, 1000]

/**
 * The capacity page's tables: events/s and ordering down, each store with and without the journal across; then the
 * bytes each is made of.
 */
export function sizingTable(): string {
  const header = [
    '| Events/s | Ordering | Redis | Redis + journal | PostgreSQL | PostgreSQL + journal |',
    '| ---: | --- | ---: | ---: | ---: | ---: |',
  ]
  const rows: string[] = []
  for (const rate of RATES) {
    for (const ordered of [false, true]) {
      const cells = (['redis', 'postgres'] as const).flatMap((store) =>
        [false, true].map((journal) => gigabytes(estimate({ store, rate, ordered, journal }).total)),
      )
      rows.push(`| ${rate.toLocaleString('en')} | ${ordered ? 'ordered' : 'unordered'} | ${cells.join(' | ')} |`)
    }
  }
  const { redis, postgres } = BYTES
  const figures = [
    '',
    '| Kept | Redis | PostgreSQL |',
    '| --- | ---: | ---: |',
    `| an unordered event, for the store's retention | ${redis.unordered} B | ${postgres.unordered} B |`,
    `| an ordered event (its marker and its key's fence) | ${redis.ordered} B | ${postgres.ordered} B |`,
    `| a journal answer, for the journal's retention | ${redis.journalAnswer} B | ${postgres.journalAnswer} B |`,
    `| measured by | ${redis.source} | ${postgres.source} |`,
  ]
  return [...header, ...rows, ...figures].join('\n')
}
