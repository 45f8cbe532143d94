// What a receiver's answer means, for the answers a newcomer meets first and cannot read: the dashboard, the
// log API and `payhooks sandbox advance` all show the same sentence.

/**
 * What an attempt's answer means, when it is one a payhooks receiver gives and the status alone does not explain:
 * a 401 (the signature check failed), `future_event` (created_at ahead of the receiver's clock), `stale_event`
 * (created_at older than the receiver accepts, and not handled before), `parked` (kept in a dead-letter store), a 409
 * `in_progress` (another delivery of the event at that moment: both subscriptions during a rotation) and the 200
 * `stale` of receivers before `stale_event`.
 * Matched on the start of the body, which may be cut short.
 */
export function answerHint(status: number | undefined, response: string | undefined): string | undefined {
  const body = response ?? ''
  if (/"error"\s*:\s*"future_event"/.test(body)) {
    return "future_event: the event's created_at is ahead of the receiver's clock by more than its maxClockSkewMs (5 min by default), so it handled nothing and asks for a retry, which it will handle once the clocks agree. The sandbox stamps created_at with the wall clock, even on a manual clock, so the receiver machine's clock is behind."
  }
  if (/"error"\s*:\s*"stale_event"/.test(body)) {
    return "stale_event: the event's created_at is older than the receiver's maxEventAgeMs (its store's retention, 73 h by default) and the receiver has no record of handling it, so it ran no handler and did not acknowledge it: the service keeps retrying. A resend after a long outage gets this: give the receiver a durable dead-letter store (it then parks the event, 200 parked, for payhooks dead-letters replay) or a store kept longer (retentionMs), then resend; see \"A manual resend days later\" in docs/guide/recovery.md."
  }
  if (/"status"\s*:\s*"stale"/.test(body)) {
    return 'stale: a payhooks receiver older than stale_event answered 200 without running any handler, because created_at was older than its maxEventAgeMs: the service now counts the event as delivered. Update @payhooks/core, which parks or refuses such an event instead.'
  }
  if (/"status"\s*:\s*"parked"/.test(body)) {
    return 'parked: the receiver ran no handler but kept the event in its durable dead-letter store (a schema mismatch, a handler failing on the last tries, or stale_event: too old and not handled before), so the service counts it as delivered. payhooks dead-letters list shows why; payhooks dead-letters replay runs it once fixed.'
  }
  if (status === 409 && /"error"\s*:\s*"in_progress"/.test(body)) {
    return '409 in_progress: another delivery of this event was being handled at that moment, so this one ran nothing and asks for a retry; the service retries it in an hour and then gets 200 duplicate. During a secret rotation both subscriptions get each event at once, so one of the two is answered 409: expected, and nothing is lost.'
  }
  if (status === 401) {
    return "401: the receiver refused the signature: it must verify with this subscription's signature_secret (payhooks subscriptions get <id>). A sandbox restarted without --state makes new secrets, so a receiver still holding the old one refuses every retry."
  }
  return undefined
}
