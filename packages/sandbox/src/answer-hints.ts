// What a receiver's answer means, for the answers a newcomer meets first and cannot read: the dashboard, the
// log API and `payhooks sandbox advance` all show the same sentence.

/**
 * What an attempt's answer means, when it is one a payhooks receiver gives and the status alone does not explain:
 * a 401 (the signature check failed), `future_event` (created_at ahead of the receiver's clock) and `stale`
 * (created_at older than the receiver accepts). Matched on the start of the body, which may be cut short.
 */
export function answerHint(status: number | undefined, response: string | undefined): string | undefined {
  const body = response ?? ''
  if (/"error"\s*:\s*"future_event"/.test(body)) {
    return "future_event: the event's created_at is ahead of the receiver's clock by more than its maxClockSkewMs (5 min by default), so it handled nothing and asks for a retry, which it will handle once the clocks agree. The clock that stamped the event and the receiver's disagree: a receiver machine whose clock is behind, or a sandbox whose clock was set ahead of the receiver's."
  }
  if (/"status"\s*:\s*"stale"/.test(body) || /"error"\s*:\s*"stale_event"/.test(body)) {
    return "stale: the event's created_at is older than the receiver's maxEventAgeMs (73 h by default), so it ran no handler. A resend of an old event, or a sandbox clock far behind the receiver's, gets this; see maxEventAgeMs in the core README."
  }
  if (status === 401) {
    return "401: the receiver refused the signature: it must verify with this subscription's signature_secret (payhooks subscriptions get <id>). A sandbox restarted without --state makes new secrets, so a receiver still holding the old one refuses every retry."
  }
  return undefined
}
