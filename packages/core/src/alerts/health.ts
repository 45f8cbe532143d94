import type { HealthCheck } from '../health/types.js'
import type { Alerts } from './alerts.js'

/**
 * Each firing alert as a `health()` check, `alert_<name>`: a warning (an alert tells the operator; readiness is the
 * other checks' to decide).
 */
export function alertChecks(alerts: Alerts | undefined): HealthCheck[] {
  if (!alerts) return []
  return alerts.list().map((alert) => ({
    name: `alert_${alert.name}`,
    ok: false,
    severity: 'warning',
    detail: `${alert.severity} since ${alert.since.toISOString()}: ${alert.message}`,
  }))
}
