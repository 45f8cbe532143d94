export {
  INSTRUMENTATION_NAME,
  INSTRUMENTATION_VERSION,
  type OpenTelemetryOptions,
  openTelemetry,
} from './open-telemetry.js'
