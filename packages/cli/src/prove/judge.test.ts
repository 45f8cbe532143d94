import { describe, expect, it } from 'vitest'
import { limitJudgement, onceJudgement, type ProveContext } from './check.js'
import { twiceAtOnce } from './checks/duplicates.js'
import { resendAfterOutage } from './checks/resend.js'
import { deadlineJudgement } from './deadline.js'
import { Deliveries } from './deliveries.js'
import { readAnswer, type Sender } from './send.js'
import type { Answer } from './types.js'

const answer = (status: number | undefined, ms = 5, extra: Partial<Answer> = {}): Answer => ({
  label: 'delivery',
  method: 'POST',
  reason: '',
  ms,
  ...(status === undefined ? { error: 'timeout' as const } : { status }),
  ...extra,
})

/** A context whose sender answers from a list, in order: the judging alone, no receiver. */
function answering(...answers: Answer[]): ProveContext {
  const next = (outgoing: { label: string; eventId?: string }) => ({
    ...(answers.shift() as Answer),
    label: outgoing.label,
    ...(outgoing.eventId ? { eventId: outgoing.eventId } : {}),
  })
  const sender = {
    send: async (outgoing: { label: string }) => next(outgoing),
    together: async (list: { label: string }[]) => list.map(next),
  } as unknown as Sender
  return { sender, deliveries: new Deliveries('whsec_judge', 'run1') }
}

describe('the 10-second limit', () => {
  it('is exact: an answer at 10,000 ms passes, at 10,001 ms fails naming the limit', () => {
    expect(limitJudgement([answer(200, 10_000)])).toBeUndefined()
    expect(limitJudgement([answer(200, 10_001)])?.finding).toMatch(
      /over the service's 10-second limit \(delivery: 10001 ms\)/,
    )
    expect(limitJudgement([answer(undefined, 10_500)])?.finding).toMatch(/delivery: no answer after 10500 ms/)
    expect(deadlineJudgement([answer(200, 3), answer(200, 10_001)])).toMatchObject({ verdict: 'FAIL' })
    expect(deadlineJudgement([answer(200, 6000)])).toMatchObject({ verdict: 'WARN' })
    expect(deadlineJudgement([answer(200, 40)])).toEqual({ verdict: 'PASS', finding: 'slowest 40 ms (delivery)' })
  })
})

describe('answers', () => {
  it('are read as one line: JSON error and message, else status, else text without HTML tags', () => {
    expect(readAnswer('{"error":"invalid_json","message":"body is not valid JSON"}')).toEqual({
      reason: 'invalid_json: body is not valid JSON',
    })
    expect(readAnswer('{"ok":true,"status":"parked"}')).toEqual({ reason: 'parked', outcome: 'parked' })
    expect(
      readAnswer('<html><head><title>x</title></head><body><pre>Cannot GET /webhooks</pre></body></html>'),
    ).toEqual({
      reason: 'Cannot GET /webhooks',
    })
    expect(readAnswer('x'.repeat(500)).reason).toHaveLength(100)
  })
})

describe('judging', () => {
  it('counts 0 runs of an acknowledged event as a loss and 2 as a double run', () => {
    expect(onceJudgement({}, 'evt_1', 'the event')?.finding).toMatch(/never ran \(evt_1\): a lost event/)
    expect(onceJudgement({ evt_1: 2 }, 'evt_1', 'the event')?.finding).toMatch(/ran the handlers 2 times/)
    expect(onceJudgement({ evt_1: 1 }, 'evt_1', 'the event')).toBeUndefined()
    expect(onceJudgement(undefined, 'evt_1', 'the event')).toBeUndefined()
  })

  it('fails two copies at once answered 200 and 500, passes 200 and 409, warns at 409 and 409', async () => {
    const judge = async (...answers: Answer[]) => (await twiceAtOnce.run(answering(...answers))).judge(undefined)
    expect(await judge(answer(200), answer(500))).toMatchObject({ verdict: 'FAIL' })
    expect(await judge(answer(200), answer(409))).toMatchObject({ verdict: 'PASS' })
    expect(await judge(answer(409), answer(503))).toMatchObject({ verdict: 'WARN' })
    const twice = await twiceAtOnce.run(answering(answer(200), answer(200)))
    expect(twice.judge({ evt_prove_run1_1: 2 })).toMatchObject({ verdict: 'FAIL' })
  })

  it('passes an 80-hour resend refused with a reason or parked, and fails a 2XX the ledger shows unhandled', async () => {
    const judge = async (reply: Answer, ledger?: Record<string, number>) =>
      (await resendAfterOutage.run(answering(reply))).judge(ledger)
    expect(await judge(answer(422, 5, { reason: 'stale_event: too old' }))).toMatchObject({ verdict: 'PASS' })
    expect(await judge(answer(422))).toMatchObject({ verdict: 'WARN' })
    expect(await judge(answer(200, 5, { outcome: 'parked' }), {})).toMatchObject({ verdict: 'PASS' })
    expect(await judge(answer(200), { evt_prove_run1_1: 1 })).toMatchObject({ verdict: 'PASS' })
    expect(await judge(answer(200))).toMatchObject({ verdict: 'WARN' })
    expect((await judge(answer(200), {})).finding).toMatch(/never ran and it was not parked .*: a lost event/)
  })
})
