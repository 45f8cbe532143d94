export { redisDeadLetterStore } from './dead-letters.js'
export { redisStore } from './store.js'
export type { RedisDeadLetterStoreOptions, RedisStoreOptions } from './types.js'
