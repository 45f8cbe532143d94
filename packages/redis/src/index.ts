export { type RedisStoreOptions, redisStore } from './store.js'
