/** The commands whose answer is rows, when they are the statement's own (not a CTE's). */
const READS = new Set(['SELECT', 'VALUES', 'TABLE', 'SHOW', 'EXPLAIN'])
const WRITES = new Set(['INSERT', 'UPDATE', 'DELETE', 'MERGE'])
const LITERALS = /'(?:[^']|'')*'|"(?:[^"]|"")*"|--[^\n]*|\/\*[\s\S]*?\*\//g

const known = new Map<string, boolean>()

/**
 * Whether `text`, one statement of the store's, answers rows (a `SELECT`, or a write with a `RETURNING` of its own)
 * rather than how many rows it changed: for a library that runs the two kinds through different calls (Prisma's
 * `$queryRaw` and `$executeRaw`). Words inside parentheses (subqueries, CTEs: `WITH fence AS (UPDATE ... RETURNING 1)
 * UPDATE ...` changes rows and answers none), literals and comments do not count; several statements (no
 * placeholders) answer a count. Remembered per text: the store has a few dozen statements.
 */
export function answersRows(text: string): boolean {
  let answer = known.get(text)
  if (answer !== undefined) return answer
  let depth = 0
  let top = ''
  for (const char of text.replace(LITERALS, ' ')) {
    if (char === '(') depth++
    else if (char === ')') depth--
    else if (depth === 0) top += char
  }
  const statements = top.split(';').filter((statement) => statement.trim() !== '')
  const words: string[] =
    statements.length === 1 ? ((statements[0] as string).toUpperCase().match(/[A-Z_]+/g) ?? []) : []
  const command = words[0] === 'WITH' ? words.find((word) => READS.has(word) || WRITES.has(word)) : words[0]
  answer = command !== undefined && (READS.has(command) || (WRITES.has(command) && words.includes('RETURNING')))
  if (known.size >= 512) known.clear()
  known.set(text, answer)
  return answer
}
