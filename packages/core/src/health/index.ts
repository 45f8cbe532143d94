export { type HealthAnswer, type HealthReceiver, healthAnswer, webHealth } from './answer.js'
export { sharedHealth } from './run.js'
export { checkAtStart } from './start.js'
export type { HealthCheck, HealthOptions, HealthReport } from './types.js'
