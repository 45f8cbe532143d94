// The report of a run as people read it: one row per check (result, answers, what prove saw), then why it matters.
import type { ProveReport } from './engine.js'
import type { LettersReport } from './letters.js'
import type { OnceOnly } from './once-only.js'
import type { Answer } from './types.js'

function answerCell(answer: Answer): string {
  const status = answer.status === undefined ? (answer.error === 'timeout' ? 'timeout' : 'no answer') : answer.status
  return `${status} ${answer.ms} ms`
}

/** The table: a row per check, and under it an indented line on why it matters and how to fix it. */
export function renderReport(report: ProveReport): string {
  const rows = report.checks.map((check) => ({
    cells: [check.id, check.verdict, check.answers.map(answerCell).join(', ') || '-', check.finding],
    advice: check.advice,
  }))
  const header = ['CHECK', 'RESULT', 'ANSWER', 'SEEN']
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map(({ cells }) => (cells[column] ?? '').length)),
  )
  const line = (cells: string[]) =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
      .join('  ')
      .trimEnd()
  const { pass, warn, fail } = report.summary
  return [
    `payhooks prove ${report.url}${report.ledger ? ` (ledger ${report.ledger})` : ''}: event ids evt_prove_${report.run}_*`,
    '',
    line(header),
    ...rows.flatMap(({ cells, advice }) => [line(cells), `    why: ${advice}`]),
    '',
    `${report.checks.length} checks: ${pass} PASS, ${warn} WARN, ${fail} FAIL; ${report.requests} requests in ${(report.ms / 1000).toFixed(1)} s`,
    onceOnlyLine(report.onceOnly),
    lettersLine(report.letters),
  ].join('\n')
}

/** Whether --ledger's once-only check ran, and what it found. */
export function onceOnlyLine(once: OnceOnly): string {
  if (!once.checked) return 'once-only: NOT CHECKED (no --ledger: a dropped event looks like a handled one)'
  const counted = `${once.acknowledged} acknowledged events each ran once, ${once.refused} refused ones never`
  if (once.passed) return `once-only (--ledger): PASS: ${counted}`
  return `once-only (--ledger): FAIL: ${once.problems.join('; ')}`
}

const listed = (ids: string[]) =>
  ids.length > 3 ? `${ids.slice(0, 3).join(', ')} and ${ids.length - 3} more` : ids.join(', ')

/** What the run left in the receiver's dead letters. */
export function lettersLine(letters: LettersReport): string {
  const cleanup = 'delete with payhooks prove --cleanup --module <file> before any replay of all'
  if (letters.lookedIn === 'answers') {
    if (letters.left.length === 0)
      return "letters: none parked, by the answers (--module <file> looks in the dead letters and deletes the run's)"
    return `letters: LEFT ${listed(letters.left)}, parked by the receiver: a signed letter a replay would run as a real event; ${cleanup}`
  }
  const deleted = letters.deleted.length === 0 ? 'none found' : `deleted ${listed(letters.deleted)}`
  if (letters.left.length === 0) return `letters: ${deleted} in the dead letters`
  return `letters: ${deleted}; LEFT ${listed(letters.left)}${letters.note ? ` (${letters.note})` : ''}; ${cleanup}`
}
