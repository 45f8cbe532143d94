// A script's Lua without the functions it never calls. Redis runs a script's whole chunk on every call, so each
// `local function` costs a closure each time (about 0.3 µs): the store's scripts share their Lua, and the claim's
// carried eight functions where it calls three.

const FUNCTION = /^local function ([A-Za-z_][A-Za-z0-9_]*)\(/

/**
 * `lua` less the top-level `local function` definitions that nothing kept refers to. A definition starts at a line
 * `local function name(` and ends at the next line `end` at column 0 (or on its own line when that line ends in
 * ` end`); everything else is kept but blank lines and whole-line comments.
 */
export function shake(lua: string): string {
  const blocks: { name?: string; text: string }[] = []
  const lines = lua.split('\n').filter((line) => line.trim() !== '' && !line.trimStart().startsWith('--'))
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string
    const name = FUNCTION.exec(line)?.[1]
    if (name === undefined) {
      blocks.push({ text: line })
      continue
    }
    let end = i
    if (!line.endsWith(' end')) while (end < lines.length - 1 && lines[end] !== 'end') end++
    blocks.push({ name, text: lines.slice(i, end + 1).join('\n') })
    i = end
  }
  const names = new Set(blocks.flatMap((block) => (block.name === undefined ? [] : [block.name])))
  const used = new Set<string>()
  const visit = (text: string) => {
    for (const word of text.match(/(?<![.\w])[A-Za-z_][A-Za-z0-9_]*/g) ?? []) {
      if (!names.has(word) || used.has(word)) continue
      used.add(word)
      for (const block of blocks) if (block.name === word) visit(block.text.slice(block.text.indexOf('(')))
    }
  }
  for (const block of blocks) if (block.name === undefined) visit(block.text)
  return blocks
    .filter((block) => block.name === undefined || used.has(block.name))
    .map((block) => block.text)
    .join('\n')
}
