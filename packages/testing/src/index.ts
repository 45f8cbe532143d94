export {
  type Clock,
  type ClockTimer,
  createManualClock,
  isManualClock,
  type ManualClock,
  type ManualClockOptions,
  realClock,
} from './clock.js'
export { type SampleEventOptions, type SampleEventType, sampleEvent, sampleEventTypes, samples } from './samples.js'
export {
  createSandbox,
  type Sandbox,
  type SandboxChaosOptions,
  type SandboxEmitOptions,
  type SandboxOptions,
  type SandboxSubscribeOptions,
} from './sandbox.js'
export {
  defaultSandboxCredentials,
  type SandboxCredentials,
  type SandboxMerchant,
  type SandboxReseller,
} from './sandbox-auth.js'
export type {
  ResolvedChaos,
  SandboxAttempt,
  SandboxDelivery,
  SandboxDeliveryState,
  SandboxLogEntry,
} from './sandbox-delivery.js'
export type { SandboxSubscription } from './sandbox-subscriptions.js'
export { type SignedDelivery, signedDelivery, signedRequest } from './signing.js'
