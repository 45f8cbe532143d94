// Goodput under overload (issue 30 item 5): a receiver with maxConcurrentEvents slots and handlers of HANDLER_MS,
// offered OVERLOAD times the events it can handle, at an even rate (an open loop: senders do not wait for answers,
// as the service's deliveries do not wait for each other). Against a hand-written baseline in the same run: the
// same verification and handler behind a FIFO semaphore whose waiters are answered 503 at the deadline (what
// maxConcurrentEvents did before). Rounds alternate; medians reported. Then the heap kept by deliveries answered
// `busy` while every slot is stuck. In-process through receive(), so only the scheduling differs.
//   pnpm bench overload    (BENCH_ROUNDS, default 3; BENCH_SECONDS of offered load per round, default 4)
import { createHmac, timingSafeEqual } from 'node:crypto'
import { createWebhooks, memoryStore, sign } from '@payhooks/core'
import { sampleEvent } from '@payhooks/testing'

const SECRET = 'whsec_bench_overload'
const SLOTS = 4
const HANDLER_MS = 50
const DEADLINE_MS = 1000
const OVERLOAD = 12
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4)
/** Events the receiver can handle per second. */
const CAPACITY = (SLOTS * 1000) / HANDLER_MS
const TICK_MS = 10
const PER_TICK = (CAPACITY * OVERLOAD * TICK_MS) / 1000
/** An answer this much past its deadline counts as late (timer granularity on a loaded machine). */
const LATE_SLACK_MS = 25

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

async function makeEvents(tag, count) {
  const events = []
  for (let i = 0; i < count; i++) {
    const body = Buffer.from(JSON.stringify(sampleEvent('transaction_settled', { eventId: `evt_${tag}_${i}` })))
    events.push({ id: `evt_${tag}_${i}`, body, signature: await sign(SECRET, body) })
  }
  return events
}

/** A round's tally: which events' handlers ran to the end, and every answer with its latency. */
function tally() {
  return { finished: new Set(), answers: new Map(), late: 0, lateStatuses: {}, maxLatency: 0 }
}

function kit(round) {
  const webhooks = createWebhooks({
    secret: SECRET,
    store: memoryStore(),
    maxConcurrentEvents: SLOTS,
    deadlineMs: DEADLINE_MS,
  })
  webhooks.onError(() => {})
  webhooks.onAny(async (event) => {
    await sleep(HANDLER_MS)
    round.finished.add(event.event_id)
  })
  return ({ body, signature }) =>
    webhooks.receive({ body, getHeader: (name) => (name === 'service-hmac-sha256' ? signature : undefined) })
}

/** Hand-written: HMAC check, JSON.parse, a Set, a FIFO semaphore of SLOTS; 503 at the deadline. */
function fifoBaseline(round) {
  const seen = new Set()
  const waiters = []
  let free = SLOTS
  const release = () => {
    const next = waiters.shift()
    if (next) next()
    else free++
  }
  const acquire = (deadline) =>
    new Promise((resolve) => {
      if (free > 0) {
        free--
        resolve(true)
        return
      }
      let done = false
      const grant = () => {
        if (done) return release()
        done = true
        clearTimeout(timer)
        resolve(true)
      }
      const timer = setTimeout(() => {
        done = true
        resolve(false)
      }, deadline - Date.now())
      waiters.push(grant)
    })
  return async ({ body, signature }) => {
    const arrivedAt = Date.now()
    const actual = createHmac('sha256', SECRET).update(body).digest()
    if (!timingSafeEqual(actual, Buffer.from(signature, 'hex'))) return { status: 401 }
    const event = JSON.parse(body.toString('utf8'))
    if (seen.has(event.event_id)) return { status: 200 }
    const deadline = arrivedAt + DEADLINE_MS
    if (!(await acquire(deadline))) return { status: 503 }
    const work = sleep(HANDLER_MS).then(() => {
      seen.add(event.event_id)
      round.finished.add(event.event_id)
      release()
    })
    const left = deadline - Date.now()
    let timer
    const expired = new Promise((resolve) => {
      timer = setTimeout(() => resolve('late'), left)
    })
    const first = await Promise.race([work, expired])
    clearTimeout(timer)
    return { status: first === 'late' ? 503 : 200 }
  }
}

/** Offers `events` at OVERLOAD times capacity and waits for every answer. */
async function offer(receive, round, events) {
  const startedAt = Date.now()
  const pending = []
  let sent = 0
  for (let tick = 0; sent < events.length; tick++) {
    const wait = startedAt + tick * TICK_MS - Date.now()
    if (wait > 0) await sleep(wait)
    for (let i = 0; i < PER_TICK && sent < events.length; i++) {
      const event = events[sent++]
      const arrivedAt = Date.now()
      pending.push(
        Promise.resolve(receive(event)).then((answer) => {
          const latency = Date.now() - arrivedAt
          round.answers.set(event.id, answer.status)
          round.maxLatency = Math.max(round.maxLatency, latency)
          if (latency > DEADLINE_MS + LATE_SLACK_MS) {
            round.late++
            round.lateStatuses[answer.status] = (round.lateStatuses[answer.status] ?? 0) + 1
          }
        }),
      )
    }
  }
  await Promise.all(pending)
  const elapsed = Date.now() - startedAt
  await sleep(HANDLER_MS * 2) // runs answered 503 at the deadline may still be finishing
  const finished = [...round.finished]
  const answered2xx = finished.filter((id) => round.answers.get(id) === 200).length
  return {
    offered: events.length,
    runs: finished.length,
    share2xx: finished.length === 0 ? 1 : answered2xx / finished.length,
    capacityUsed: answered2xx / ((elapsed / 1000) * CAPACITY),
    late: round.late,
    lateStatuses: round.lateStatuses,
    maxLatency: round.maxLatency,
  }
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]
}

const perRound = Math.round(CAPACITY * OVERLOAD * SECONDS)
const variants = { 'fifo baseline': fifoBaseline, kit }
const results = Object.fromEntries(Object.keys(variants).map((name) => [name, []]))
console.log(
  `${SLOTS} slots x ${HANDLER_MS} ms handlers (capacity ${CAPACITY}/s), offered ${OVERLOAD}x (${CAPACITY * OVERLOAD}/s) for ${SECONDS} s, deadline ${DEADLINE_MS} ms, ${ROUNDS} rounds`,
)
for (let r = 0; r < ROUNDS; r++) {
  const names = Object.keys(variants)
  if (r % 2 === 1) names.reverse()
  for (const name of names) {
    const round = tally()
    const events = await makeEvents(`${name.replace(/\W/g, '')}_${r}`, perRound)
    const result = await offer(variants[name](round), round, events)
    results[name].push(result)
    console.log(
      `round ${r + 1} ${name}: ${result.runs} runs, ${(result.share2xx * 100).toFixed(1)}% answered 2XX, ${(result.capacityUsed * 100).toFixed(1)}% of capacity, ${result.late} late answers ${JSON.stringify(result.lateStatuses)} (max ${result.maxLatency} ms)`,
    )
  }
}
console.log(
  '\n| variant | runs answered 2XX | capacity processed (2XX runs) | answers after the deadline | max latency |',
)
console.log('|---|---|---|---|---|')
for (const [name, rows] of Object.entries(results)) {
  const pct = (key) => `${(median(rows.map((row) => row[key])) * 100).toFixed(1)}%`
  console.log(
    `| ${name} | ${pct('share2xx')} | ${pct('capacityUsed')} | ${median(rows.map((row) => row.late))} | ${median(rows.map((row) => row.maxLatency))} ms |`,
  )
}
const kitRows = results.kit
const met =
  median(kitRows.map((row) => row.share2xx)) >= 0.9 &&
  median(kitRows.map((row) => row.capacityUsed)) >= 0.8 &&
  kitRows.every((row) => row.late === 0)
console.log(`\ntarget (≥ 90% of runs 2XX, ≥ 80% of capacity, no answer after the deadline): ${met ? 'met' : 'not met'}`)

// Memory: every slot stuck on a handler that never settles, STUCK deliveries answered `busy` at the deadline.
const STUCK = 40_000
const stuck = createWebhooks({ secret: SECRET, store: memoryStore(), maxConcurrentEvents: SLOTS, deadlineMs: 50 })
stuck.onError(() => {})
stuck.onAny(() => new Promise(() => {}))
const stuckEvents = await makeEvents('stuck', STUCK + SLOTS)
const deliverStuck = ({ body, signature }) =>
  stuck.receive({ body, getHeader: (name) => (name === 'service-hmac-sha256' ? signature : undefined) })
for (const event of stuckEvents.slice(0, SLOTS)) deliverStuck(event)
globalThis.gc?.()
const heapBefore = process.memoryUsage().heapUsed
let busy = 0
for (let i = SLOTS; i < stuckEvents.length; i += 2000) {
  const answers = await Promise.all(stuckEvents.slice(i, i + 2000).map(deliverStuck))
  busy += answers.filter((answer) => answer.status === 503).length
}
globalThis.gc?.()
const grown = process.memoryUsage().heapUsed - heapBefore
console.log(
  `\nevery slot stuck: ${busy} deliveries answered 503 busy; heap grown ${(grown / 1e6).toFixed(1)} MB (${Math.round(grown / busy)} B each)`,
)
process.exit(0)
