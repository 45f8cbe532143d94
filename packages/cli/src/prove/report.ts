// The report of a run as people read it: one row per check (result, answers, what prove saw), then why it matters.
import type { ProveReport } from './engine.js'
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
    `${report.checks.length} checks: ${pass} PASS, ${warn} WARN, ${fail} FAIL; ${report.requests} requests in ${(report.ms / 1000).toFixed(1)} s${report.ledger ? '' : ' (no --ledger: once-only handling not checked)'}`,
  ].join('\n')
}
