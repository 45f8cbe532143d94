import { describe, expect, it } from 'vitest'
import { answerHint } from './answer-hints.js'

describe('answerHint', () => {
  it.each([
    [
      401,
      '{"error":"invalid_signature","message":"service-hmac-sha256 does not match the body"}',
      /^401: the receiver refused the signature/,
    ],
    [401, undefined, /^401: /],
    [
      503,
      `{"error":"future_event","message":"created_at is ahead of this receiver's clock; retry later"}`,
      /^future_event: the event's created_at is ahead/,
    ],
    [
      503,
      `{"error":"future_event","message":"created_at is ahead of this receiver's clock; retry later"}`,
      /the wall clock, even on a manual clock, so the receiver machine's clock is behind/,
    ],
    [
      422,
      '{"error":"stale_event","message":"event older than this receiver accepts and not handled before; not acknowledged"}',
      /^stale_event: the event's created_at is older than the receiver's maxEventAgeMs .* did not acknowledge it/,
    ],
    [200, '{"ok":true,"event_id":"evt_1","status":"parked"}', /^parked: .*payhooks dead-letters replay runs it/],
    [200, '{"ok":true,"event_id":"evt_1","status":"stale"}', /^stale: a payhooks receiver older than stale_event/],
    [
      409,
      '{"error":"in_progress","message":"event evt_1 is being handled by another delivery"}',
      /^409 in_progress: .*During a secret rotation both subscriptions get each event at once/,
    ],
  ])('explains %s %s', (status, body, hint) => {
    expect(answerHint(status, body)).toMatch(hint)
  })

  it('says nothing about answers the status explains', () => {
    expect(answerHint(200, '{"ok":true,"event_id":"evt_1","status":"processed"}')).toBeUndefined()
    expect(answerHint(500, 'database unavailable')).toBeUndefined()
    expect(answerHint(undefined, undefined)).toBeUndefined()
  })
})
