export { redisStore } from './store.js'
export type { RedisStoreOptions } from './types.js'
