import type { Stats } from '../stats/index.js'
import type { SecretList } from '../verify/secrets.js'
import type { Watch } from './watch.js'

/** What an alert may say of the secrets: their labels, `#<index>` for an unlabeled one. Never a secret. */
export function secretLabels(list: SecretList | undefined): readonly string[] | undefined {
  if (!list) return undefined
  return list.secrets.map((_, index) => list.verified?.[index]?.label ?? `#${index}`)
}

/**
 * `signature_failures`: `after` deliveries in a row refused `invalid_signature`, none verified in between; resolved
 * by the next delivery that verifies. The run is counted by the stats on the hot path (one integer).
 */
export function signatureFailuresWatch(stats: Stats, after: number, labels: readonly string[] | undefined): Watch {
  const tried = labels ? `the secrets ${labels.join(', ')}` : 'the secrets the resolver gave'
  return {
    name: 'signature_failures',
    check() {
      const run = stats.invalidRun
      if (run < after) return []
      return [
        {
          severity: 'critical',
          since: stats.invalidRunStart,
          message: `${run} deliveries in a row matched none of ${tried}: likely a secret rotated in the service's portal and not here (the service retries them; fix the secret)`,
          ...(labels ? { secretLabels: labels } : {}),
        },
      ]
    },
  }
}
