/** A statement's text cut at its `$n` placeholders: `parts[i]` precedes the value `$order[i]` (1-based). */
export interface Numbered {
  parts: string[]
  order: number[]
}

/** The store's statements are a few dozen constant texts: each is cut once. */
const cut = new Map<string, Numbered>()

/**
 * `text` cut at its `$1`, `$2`... placeholders, for libraries whose raw statements take values another way (Knex's
 * `?`, Drizzle's `sql` chunks). The store's statements hold no `$n` inside a literal, nor a `?`.
 */
export function numbered(text: string): Numbered {
  let found = cut.get(text)
  if (found === undefined) {
    const pieces = text.split(/\$(\d+)/)
    const parts: string[] = []
    const order: number[] = []
    for (let i = 0; i < pieces.length; i++) {
      if (i % 2 === 0) parts.push(pieces[i] as string)
      else order.push(Number(pieces[i]))
    }
    found = { parts, order }
    if (cut.size < 1000) cut.set(text, found)
  }
  return found
}

/** The values of `text`'s placeholders in the order they appear (a placeholder used twice, twice). */
export const valuesInOrder = (order: number[], values: unknown[]) => order.map((n) => values[n - 1])
