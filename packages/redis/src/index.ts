export { redisDeadLetterStore } from './dead-letters.js'
export { redisJournal } from './journal.js'
export { redisPauseStore } from './pauses.js'
export { redisStore } from './store.js'
export type {
  RedisDeadLetterStoreOptions,
  RedisJournalOptions,
  RedisPauseStoreOptions,
  RedisStoreOptions,
} from './types.js'
