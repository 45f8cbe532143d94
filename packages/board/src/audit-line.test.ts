// The audit's log line: one line whatever the batch, counts and first and last id, never the list (onAudit has it).
import { describe, expect, it, vi } from 'vitest'
import { createBoard } from './board.js'
import { change, HOST, park, request, setUp } from './test-helpers.js'

describe('audit lines', () => {
  it('logs each audit on one line: counts, the first and last id, never the list; console gets the message alone', async () => {
    const fields: Record<string, unknown>[] = []
    const { board, store, audits } = await setUp({ logger: { warn() {}, info: (f) => void fields.push(f) } })
    const ids = Array.from({ length: 50 }, (_, i) => `evt_line_${String(i).padStart(2, '0')}`)
    for (const id of ids) await park(store, id)
    await board.handle(request(change('/api/dead-letters/replay', { eventIds: ids })))
    expect(audits[0]?.outcomes).toHaveLength(50)
    expect(fields).toEqual([
      {
        code: 'board_replay',
        actor: 'ops',
        count: 50,
        processed: 50,
        first_event_id: 'evt_line_00',
        last_event_id: 'evt_line_49',
      },
    ])
    const info = vi.spyOn(console, 'info').mockImplementation(() => {})
    try {
      const { webhooks } = await setUp()
      const onConsole = createBoard({ webhooks, authorize: () => true, origin: `https://${HOST}`, actor: () => 'a\nb' })
      await onConsole.handle(request(change('/api/dead-letters/delete', { eventIds: ['evt_gone'] })))
      expect(info.mock.calls).toEqual([
        ['payhooks board: delete of 1 dead letter(s) by a\\u000ab: 0 deleted, 1 not found'],
      ])
    } finally {
      info.mockRestore()
    }
  })
})
