import { describe, expect, it } from 'vitest'
import { LazyAbortController } from './dispatch.js'

describe('LazyAbortController', () => {
  it('aborts a signal read before the abort, with the reason', () => {
    const controller = new LazyAbortController()
    const signal = controller.signal
    expect(signal.aborted).toBe(false)
    const reason = new Error('lease lost')
    controller.abort(reason)
    expect(signal.aborted).toBe(true)
    expect(signal.reason).toBe(reason)
    expect(controller.signal).toBe(signal)
  })

  it('gives a signal read only after the abort that is already aborted, with the first reason', () => {
    const controller = new LazyAbortController()
    const reason = new Error('closing')
    controller.abort(reason)
    controller.abort(new Error('second'))
    expect(controller.signal.aborted).toBe(true)
    expect(controller.signal.reason).toBe(reason)
  })
})
