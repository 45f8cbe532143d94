export { redisDeadLetterStore } from './dead-letters.js'
export { redisJournal } from './journal.js'
export { redisStore } from './store.js'
export type { RedisDeadLetterStoreOptions, RedisJournalOptions, RedisStoreOptions } from './types.js'
