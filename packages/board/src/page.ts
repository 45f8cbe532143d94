// The page and its files. The page holds no data but the CSRF token (in a meta tag); its modules read
// everything from the API and only ever put values into text nodes.
import { readFileSync } from 'node:fs'
import { STYLE } from './style.js'

// From src (tests) and dist alike: the compiled modules are in dist/client.
const CLIENT = new URL('../dist/client/', import.meta.url)
const MODULE = /^[a-z-]+\.js$/

export function page(token: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="payhooks-board-csrf" content="${token}">
<title>payhooks board</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="assets/app.css">
<script type="module" src="assets/app.js"></script>
</head>
<body>
<header>
  <h1>payhooks <span>board</span></h1>
  <nav>
    <a href="#/" data-view="letters">Dead letters</a>
    <a href="#/events" data-view="events">Events</a>
    <a href="#/overview" data-view="overview">Overview</a>
    <a href="#/secrets" data-view="secrets">Secrets</a>
    <a href="#/keys" data-view="keys">Ordering keys</a>
  </nav>
  <span id="mode" class="mode" hidden>read-only</span>
  <button id="zone" class="zone" type="button" title="Show times in UTC or in this browser's zone"></button>
</header>
<p id="notice" class="notice" role="status" hidden></p>
<main id="view"></main>
</body>
</html>
`
}

const files = new Map<string, { type: string; body: string }>()

/** A file of the page, or undefined. The modules are read from disk once. */
export function asset(name: string): { type: string; body: string } | undefined {
  if (name === 'app.css') return { type: 'text/css; charset=utf-8', body: STYLE }
  if (!MODULE.test(name)) return undefined
  let file = files.get(name)
  if (!file) {
    try {
      file = { type: 'text/javascript; charset=utf-8', body: readFileSync(new URL(name, CLIENT), 'utf8') }
    } catch {
      return undefined
    }
    files.set(name, file)
  }
  return file
}
