/** Plain columns padded with spaces; the last column is not padded. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)))
  const line = (cells: string[]) =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
      .join('  ')
      .trimEnd()
  return [line(header), ...rows.map(line)].join('\n')
}

/** One `key  value` line per field, values that are not strings written as JSON. */
export function keyValues(record: Record<string, unknown>): string {
  const entries = Object.entries(record)
  const width = Math.max(0, ...entries.map(([key]) => key.length))
  return entries.map(([key, value]) => `${key.padEnd(width)}  ${show(value)}`).join('\n')
}

export function show(value: unknown): string {
  if (typeof value === 'string') return value
  if (value instanceof Date) return value.toISOString()
  if (Array.isArray(value) && value.every((item) => typeof item === 'string')) return value.join(', ')
  return JSON.stringify(value) ?? String(value)
}
