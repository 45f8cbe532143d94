export { type SampleEventOptions, type SampleEventType, sampleEvent, sampleEventTypes, samples } from './samples.js'
export { type SignedDelivery, signedDelivery, signedRequest } from './signing.js'
