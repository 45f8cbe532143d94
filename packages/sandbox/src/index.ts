export {
  type Clock,
  type ClockTimer,
  createManualClock,
  isManualClock,
  type ManualClock,
  type ManualClockOptions,
  realClock,
} from './clock.js'
export { SandboxHttpError } from './errors.js'
export { defaultSandboxCredentials, type SandboxChaosOptions, type SandboxOptions } from './options.js'
export { createSandbox } from './server.js'
export type {
  ResolvedChaos,
  Sandbox,
  SandboxAttempt,
  SandboxCredentials,
  SandboxDelivery,
  SandboxDeliveryState,
  SandboxEmitOptions,
  SandboxLogEntry,
  SandboxMerchant,
  SandboxReseller,
  SandboxSubscribeOptions,
  SandboxSubscription,
} from './types.js'
