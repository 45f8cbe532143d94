import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { describe, expect, it, vi } from 'vitest'
import { change, json, request, SECRET, setUp } from './test-helpers.js'

async function deliver(webhooks: Awaited<ReturnType<typeof setUp>>['webhooks'], eventId: string) {
  const { body, headers } = await signedDelivery(sampleEvent('transaction_settled', { eventId }), SECRET)
  return webhooks.receive({ method: 'POST', body, getHeader: (name) => headers[name as never] })
}

describe('pauses on the board', () => {
  it('pauses a type with its reason (audited), shows it on the overview, and resumes it', async () => {
    const { board, webhooks, audits, logs, runs } = await setUp()
    const paused = await board.handle(
      request(change('/api/pause', { eventType: 'transaction_settled', reason: 'ledger' })),
    )
    expect(paused.status).toBe(200)
    expect(json(paused)).toMatchObject({ eventType: 'transaction_settled', reason: 'ledger' })
    expect(audits.at(-1)).toMatchObject({
      action: 'pause',
      actor: 'ops',
      eventType: 'transaction_settled',
      reason: 'ledger',
    })
    expect(logs.at(-1)).toBe('payhooks board: pause of transaction_settled by ops (ledger)')

    expect((await deliver(webhooks, 'evt_board_paused')).status).toBe(503)
    const overview = json(await board.handle(request({ path: '/api/overview' })))
    expect(overview.paused.pauses).toEqual([
      expect.objectContaining({ eventType: 'transaction_settled', reason: 'ledger' }),
    ])
    expect(overview.paused.types).toContain('transaction_returned')
    expect(overview.health.checks).toContainEqual(expect.objectContaining({ name: 'paused', severity: 'warning' }))

    const resumed = await board.handle(request(change('/api/resume', { eventType: 'transaction_settled' })))
    expect(json(resumed)).toEqual({ resumed: true, replaying: true })
    expect(await webhooks.paused()).toEqual([])
    expect((await deliver(webhooks, 'evt_board_after')).status).toBe(200)
    expect(runs.get('evt_board_after')).toBe(1)
    await vi.waitFor(
      () => expect(audits.at(-1)).toMatchObject({ action: 'resume', eventType: 'transaction_settled' }),
      {
        timeout: 10_000,
        interval: 10,
      },
    )
  })

  it('refuses a pause from a read-only board and a bad type', async () => {
    const { board } = await setUp({ readOnly: true })
    expect((await board.handle(request(change('/api/pause', { eventType: 'transaction_settled' })))).status).toBe(403)
    const open = (await setUp()).board
    expect((await open.handle(request(change('/api/pause', { eventType: '' })))).status).toBe(400)
    expect((await open.handle(request(change('/api/pause', { eventType: 'x', reason: 'a\nb' })))).status).toBe(400)
  })
})
