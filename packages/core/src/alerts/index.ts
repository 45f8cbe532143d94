export { Alerts } from './alerts.js'
export { alertChecks } from './health.js'
export { type AlertSources, alertWatches } from './options.js'
export type {
  Alert,
  AlertListener,
  AlertName,
  AlertSeverity,
  AlertsOptions,
  DeadLettersGrowingAlertOptions,
  HandlersHungAlertOptions,
  JournalDroppingAlertOptions,
  SignatureFailuresAlertOptions,
  SilenceAlertOptions,
  StoreMemoryAlertOptions,
  SubscriptionAlertOptions,
  SubscriptionReader,
} from './types.js'
