#!/usr/bin/env node
// Writes the sizing table of docs/guide/capacity.md from packages/cli/src/sizing.ts (built: run `pnpm build` first),
// between its <!-- sizing-table --> markers, so the page and `payhooks size` give the same figures.
import { readFileSync, writeFileSync } from 'node:fs'
import { sizingTable } from '../packages/cli/dist/sizing.js'

const page = new URL('../docs/guide/capacity.md', import.meta.url)
const text = readFileSync(page, 'utf8')
const marked = /<!-- sizing-table -->\n(?:[\s\S]*?\n)?<!-- \/sizing-table -->/
if (!marked.test(text)) throw new Error('docs/guide/capacity.md has no <!-- sizing-table --> markers')
writeFileSync(page, text.replace(marked, `<!-- sizing-table -->\n${sizingTable()}\n<!-- /sizing-table -->`))
console.log('docs/guide/capacity.md: sizing table written')
