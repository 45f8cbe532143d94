/**
 * What each migration of `sql/` leaves in the database, for `health()`: the table it makes or changes (the
 * store's `table` plus `suffix`) and the columns (or check constraint) that then exist. A new migration adds one
 * entry here; `health()` reports it as `postgres_migration_<number>` (`dead_letter_postgres_migration_<number>`).
 */
export interface Migration {
  /** Its number in `sql/`: `'004'`. */
  number: string
  /** Its file in `sql/`. */
  file: string
  /** Which store needs it. */
  store: 'events' | 'dead_letters'
  /** Appended to the store's `table` to name the table it makes (`'_fences'`). @default '' */
  suffix?: string
  /** Columns it creates or adds. */
  columns: readonly string[]
  /** A text every one of the table's check constraints naming `handler_failed` contains once applied. */
  constraintIncludes?: string
  /** What breaks without it; a migration needed only by an option is a warning. */
  without: string
  severity?: 'warning'
}

export const MIGRATIONS: readonly Migration[] = [
  {
    number: '001',
    file: '001_payhooks_events.sql',
    store: 'events',
    columns: ['event_id', 'token', 'expires_at'],
    without: 'every delivery is refused 503',
  },
  {
    number: '002',
    file: '002_payhooks_dead_letters.sql',
    store: 'dead_letters',
    columns: [
      'event_id',
      'event_type',
      'body',
      'headers',
      'code',
      'reason',
      'created_at',
      'first_parked_at',
      'parked_at',
      'park_count',
      'status',
      'replayed_at',
    ],
    without: 'no event can be parked, so events that need parking are refused',
  },
  {
    number: '003',
    file: '003_payhooks_dead_letters_stale_event.sql',
    store: 'dead_letters',
    columns: [],
    constraintIncludes: 'stale_event',
    without: 'stale events (a resend after a long outage) cannot be parked and are refused',
  },
  {
    number: '004',
    file: '004_payhooks_events_body_digest.sql',
    store: 'events',
    columns: ['body_digest'],
    without: 'copies of a handled event with other bytes are not reported',
    severity: 'warning',
  },
  {
    number: '005',
    file: '005_payhooks_events_fences.sql',
    store: 'events',
    suffix: '_fences',
    columns: ['ordering_key', 'holder', 'held_until', 'mark_at', 'mark_type', 'mark_id', 'keep_until'],
    without: 'events of types with ordering rules are refused',
    severity: 'warning',
  },
  {
    number: '006',
    file: '006_payhooks_events_fence_token.sql',
    store: 'events',
    suffix: '_fences',
    columns: ['fence_token'],
    without: 'events of types with ordering rules are refused 503 (no fencing token)',
    severity: 'warning',
  },
  {
    number: '007',
    file: '007_payhooks_events_held_keys.sql',
    store: 'events',
    suffix: '_fences',
    columns: ['held_since', 'holder_event_id', 'holder_event_type'],
    without: 'webhooks.heldKeys() cannot list the ordering keys held (it rejects, naming this migration)',
    severity: 'warning',
  },
]
