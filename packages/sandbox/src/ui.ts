// The dashboard's static files: one page, its style sheet and its scripts. They hold no data; the
// scripts read everything from the guarded control routes and the event stream.
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { RETRY_INTERVAL_MS, RETRY_WINDOW_MS } from '@payhooks/core'

/** Where the browser finds the service contract the dashboard's modules import (no bundler: an import map). */
const CONTRACT_PATH = '/_sandbox/ui/core/service-contract.js'
const IMPORT_MAP = JSON.stringify({ imports: { '@payhooks/core/service-contract': CONTRACT_PATH } })

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>payhooks sandbox</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/_sandbox/ui/app.css">
<script type="importmap">${IMPORT_MAP}</script>
<script type="module" src="/_sandbox/ui/app.js"></script>
</head>
<body>
<header>
  <h1>payhooks <span>sandbox</span></h1>
  <span id="live" class="live" data-state="connecting">connecting…</span>
  <span id="chaos" class="chaos"></span>
  <div class="clock"><span id="clock-kind">clock</span> <time id="clock-now"></time></div>
  <div id="advance" class="advance" hidden>
    <span>advance</span>
    <button type="button" data-ms="600000">+10 min</button>
    <button type="button" data-ms="${RETRY_INTERVAL_MS}">+1 h</button>
    <button type="button" data-ms="21600000">+6 h</button>
    <button type="button" data-ms="86400000">+24 h</button>
    <button type="button" data-ms="${RETRY_WINDOW_MS}">+72 h</button>
  </div>
</header>
<p id="notice" class="notice" role="status" hidden></p>
<form id="token-form" class="token-form" hidden>
  <p>This sandbox listens beyond loopback, so its control routes need the token it printed at start
  (or open the dashboard address printed with <code>?token=</code>).</p>
  <p id="token-problem" class="problem"></p>
  <input name="token" type="password" autocomplete="off" placeholder="sandbox token" aria-label="sandbox token">
  <button type="submit">Open</button>
</form>
<main>
  <aside>
    <section class="panel">
      <h2>Emit an event</h2>
      <form id="emit">
        <label>Event type <select id="emit-type" name="event_type"></select></label>
        <label>Merchant <select id="emit-merchant" name="merchant_id"></select></label>
        <label>Data, merged over the sample (JSON, optional)
          <textarea name="data" rows="3" placeholder='{"settlement_amount": 12.5}'></textarea></label>
        <button type="submit">Emit</button>
        <p id="emit-result" class="result" role="status"></p>
      </form>
    </section>
    <section class="panel">
      <h2>Subscriptions <span id="subscription-count" class="count"></span></h2>
      <ul id="subscriptions" class="subscriptions"></ul>
    </section>
  </aside>
  <section class="events">
    <h2>Events <span id="event-count" class="count"></span> <span id="total" class="total"></span></h2>
    <form id="filters" class="filters" role="search">
      <select id="filter-type" aria-label="event type"><option value="">all event types</option></select>
      <select id="filter-status" aria-label="status">
        <option value="">any status</option>
        <option value="pending">pending</option>
        <option value="delivered">delivered</option>
        <option value="failed">failed</option>
        <option value="none">sent nowhere</option>
        <option value="2">an attempt got 2XX</option>
        <option value="401">an attempt got 401</option>
        <option value="4">an attempt got 4XX</option>
        <option value="5">an attempt got 5XX</option>
        <option value="error">an attempt got no answer</option>
      </select>
      <input id="filter-id" type="search" placeholder="event id" aria-label="event id" autocomplete="off" spellcheck="false">
    </form>
    <p id="no-events" class="empty" hidden>No event yet: emit one here or with POST /_sandbox/emit.</p>
    <p id="no-match" class="empty" hidden>No event matches these filters.</p>
    <ol id="events"></ol>
  </section>
</main>
</body>
</html>
`

const STYLE = `:root {
  --ink: #1d2330; --muted: #667085; --line: #e3e7ee; --bg: #f6f7f9; --card: #fff;
  --ok: #12805c; --ok-bg: #e3f5ec; --fail: #c4320a; --fail-bg: #fdebe6; --wait: #9a6700; --wait-bg: #fff4d6;
  --accent: #3b5bdb; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink);
}
* { box-sizing: border-box; }
[hidden] { display: none !important; }
body { margin: 0; background: var(--bg); }
code, pre, .id, .sig { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 12.5px; }
header { display: flex; flex-wrap: wrap; align-items: center; gap: 12px 18px; padding: 12px 24px;
  background: #1d2330; color: #fff; }
header h1 { margin: 0; font-size: 18px; font-weight: 650; }
header h1 span { font-weight: 400; color: #b7c3ff; }
.live { font-size: 12px; padding: 2px 8px; border-radius: 999px; background: #3a4254; }
.live::before { content: "●"; margin-right: 5px; color: #98a2b3; }
.live[data-state="live"]::before { color: #4ade80; }
.live[data-state="offline"]::before, .live[data-state="locked"]::before { color: #f87171; }
.chaos { font-size: 12px; color: #b7c3ff; }
.clock { margin-left: auto; font-variant-numeric: tabular-nums; }
.clock #clock-kind { color: #b7c3ff; font-size: 12px; margin-right: 4px; }
.advance { display: flex; align-items: center; gap: 6px; }
.advance span { color: #b7c3ff; font-size: 12px; }
button { font: inherit; font-size: 13px; padding: 5px 12px; border-radius: 6px; border: 1px solid #c5cbd6;
  background: #fff; color: var(--ink); cursor: pointer; }
button:hover:not(:disabled) { border-color: var(--accent); color: var(--accent); }
button:disabled { opacity: .5; cursor: default; }
header button { background: #2c3446; color: #fff; border-color: #4a5468; }
header button:hover:not(:disabled) { color: #fff; border-color: #b7c3ff; }
.notice { margin: 0; padding: 8px 24px; background: #e8edff; }
.notice[data-kind="error"] { background: var(--fail-bg); color: var(--fail); }
.token-form { margin: 16px 24px; padding: 16px; background: var(--card); border: 1px solid var(--line); border-radius: 10px; }
.token-form .problem { color: var(--fail); }
.token-form input { font: inherit; padding: 5px 8px; width: 320px; max-width: 100%; }
main { display: grid; grid-template-columns: minmax(260px, 320px) 1fr; gap: 20px; padding: 20px 24px; align-items: start; }
@media (max-width: 860px) { main { grid-template-columns: 1fr; } }
h2 { font-size: 15px; margin: 0 0 10px; }
.count { display: inline-block; min-width: 22px; padding: 0 6px; border-radius: 999px; background: var(--line);
  font-size: 12px; text-align: center; font-weight: 500; }
.total { font-size: 12px; color: var(--muted); font-weight: 400; }
.panel { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 14px 16px; margin-bottom: 16px; }
label { display: block; font-size: 12px; color: var(--muted); margin-bottom: 10px; }
select, textarea { display: block; width: 100%; margin-top: 3px; font: inherit; font-size: 13px; color: var(--ink);
  padding: 5px 7px; border: 1px solid #c5cbd6; border-radius: 6px; background: #fff; }
textarea { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12px; }
#emit button { background: var(--accent); color: #fff; border-color: var(--accent); }
.result { margin: 10px 0 0; font-size: 12.5px; overflow-wrap: anywhere; }
.result[data-kind="ok"] { color: var(--ok); }
.result[data-kind="warning"] { color: var(--wait); background: var(--wait-bg); padding: 6px 8px; border-radius: 6px; }
.result[data-kind="error"] { color: var(--fail); }
.subscriptions { list-style: none; margin: 0; padding: 0; }
.subscription { padding: 8px 0; border-top: 1px solid var(--line); display: grid; gap: 2px; }
.subscription:first-child { border-top: 0; }
.subscription .url { overflow-wrap: anywhere; }
.subscription .types { font-size: 12px; }
.subscription .meta, .empty { font-size: 12px; color: var(--muted); }
.subscription.inactive { opacity: .55; }
#events { list-style: none; margin: 0; padding: 0; }
.event { background: var(--card); border: 1px solid var(--line); border-radius: 10px; margin-bottom: 12px; }
.event > details > summary { display: flex; flex-wrap: wrap; align-items: center; gap: 6px 10px; padding: 10px 14px;
  cursor: pointer; list-style: none; }
.event > details > summary::-webkit-details-marker { display: none; }
.event > details > summary::before { content: "▸"; color: var(--muted); }
.event > details[open] > summary::before { content: "▾"; }
.event .type { font-weight: 600; }
.event .id { color: var(--muted); order: 10; flex-basis: 100%; padding-left: 18px; font-size: 11.5px; }
.event .meta { color: var(--muted); font-size: 12.5px; }
.event .resend { margin-left: auto; padding: 3px 10px; }
.event-body { padding: 0 14px 12px; }
.badge.backdated { background: #fff4d6; color: #7a5200; }
.badge { font-size: 11.5px; font-weight: 600; padding: 1px 8px; border-radius: 999px; text-transform: uppercase; letter-spacing: .03em; }
.state-delivered { background: var(--ok-bg); color: var(--ok); }
.state-failed { background: var(--fail-bg); color: var(--fail); }
.state-pending { background: var(--wait-bg); color: var(--wait); }
.state-none { background: var(--line); color: var(--muted); }
.warning { color: var(--wait); background: var(--wait-bg); padding: 6px 10px; border-radius: 6px; margin: 0 0 8px; }
.delivery { border-top: 1px solid var(--line); padding: 10px 0 4px; }
.delivery-head { display: flex; flex-wrap: wrap; align-items: center; gap: 6px 10px; }
.delivery-head .url { overflow-wrap: anywhere; }
.delivery-head .next-attempt { font-size: 12.5px; color: var(--wait); }
.delivery-head .reason { font-size: 12.5px; color: var(--fail); }
.timeline { padding: 30px 14px 22px; }
.filters { display: flex; flex-wrap: wrap; gap: 8px; margin: 0 0 12px; }
.filters select, .filters input { display: inline-block; width: auto; margin: 0; font: inherit; font-size: 13px;
  padding: 5px 7px; border: 1px solid #c5cbd6; border-radius: 6px; background: #fff; color: var(--ink); }
.filters input { flex: 1 1 220px; font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12.5px; }
.track { position: relative; height: 2px; background: var(--line); }
.tick { position: absolute; top: 8px; transform: translateX(-50%); font-size: 10.5px; color: var(--muted); white-space: nowrap; }
.tick::before { content: ""; position: absolute; left: 50%; top: -12px; width: 1px; height: 6px; background: #c5cbd6; }
.dot { position: absolute; top: -6px; width: 14px; height: 14px; margin-left: -7px; border-radius: 50%;
  border: 2px solid #fff; box-shadow: 0 0 0 1px rgba(0,0,0,.12); }
.dot.ok { background: var(--ok); }
.dot.fail { background: var(--fail); }
.dot.kind-duplicate, .dot.kind-resend { border-radius: 3px; }
.dot.next { background: #fff; border: 2px dashed var(--wait); box-shadow: none; }
.dot-label { position: absolute; bottom: 16px; left: 50%; transform: translateX(-50%); font-size: 11px; font-weight: 600; white-space: nowrap; }
.dot.ok .dot-label { color: var(--ok); }
.dot.fail .dot-label { color: var(--fail); }
table.attempts { width: 100%; border-collapse: collapse; font-size: 12.5px; font-variant-numeric: tabular-nums;
  table-layout: fixed; }
.attempts th:nth-child(1) { width: 28px; }
.attempts th:nth-child(2) { width: 84px; }
.attempts th:nth-child(3) { width: 196px; }
.attempts th:nth-child(4) { width: 86px; }
.attempts th:nth-child(5) { width: 64px; }
.attempts td.time, .attempts td.name, .attempts td.status, .attempts td.latency { white-space: nowrap; }
.attempts th { text-align: left; font-weight: 500; color: var(--muted); border-bottom: 1px solid var(--line); padding: 4px 8px 4px 0; }
.attempts td { padding: 4px 8px 4px 0; border-bottom: 1px solid #f0f2f5; vertical-align: top; }
.attempts tr.ok .status { color: var(--ok); font-weight: 600; }
.attempts tr.fail .status { color: var(--fail); font-weight: 600; }
.attempts .answer { overflow-wrap: anywhere; }
.attempts .answer.error { color: var(--fail); }
.attempts .answer summary { cursor: pointer; list-style: none; display: flex; }
.attempts .answer summary::-webkit-details-marker { display: none; }
.attempts .answer summary code { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; min-width: 0; }
.attempts .answer summary::after { content: "▸"; color: var(--accent); margin-left: 4px; }
.attempts .answer details[open] summary { display: none; }
.attempts .answer pre { margin: 0; white-space: pre-wrap; overflow-wrap: anywhere; font-size: 12px; }
.attempts .answer .cut { margin: 2px 0 0; font-size: 11.5px; color: var(--muted); }
.attempts tr.fold td { color: var(--muted); padding: 2px 8px 4px 0; border-bottom: 1px solid #f0f2f5; }
.attempts tr.fold button { font-size: 12px; padding: 2px 8px; }
.attempts tr.hint td { padding: 2px 8px 6px 0; border-bottom: 1px solid #f0f2f5; color: #6b4e00; font-size: 12px; }
.attempts tr.hint td:last-child { background: var(--wait-bg); padding: 5px 8px; border-radius: 4px; }
.signature { margin: 8px 0 0; font-size: 12px; color: var(--muted); overflow-wrap: anywhere; }
.signature code { color: var(--ink); }
.payload { margin-top: 8px; }
.payload summary { cursor: pointer; font-size: 12.5px; color: var(--accent); }
.payload pre { margin: 6px 0 0; padding: 10px; background: #f3f4f7; border-radius: 6px; white-space: pre-wrap; overflow-wrap: anywhere; }
`

// The browser modules: tsc compiles src/dashboard-client (tsconfig.dashboard.json) into dist/dashboard-client,
// which this path reaches from src/ (tests) and dist/ (the package) alike. Read on first request, then kept.
const CLIENT_DIR = new URL('../dist/dashboard-client/', import.meta.url)
// Resolved as an import, not require: core also ships CommonJS (dist/cjs), which a browser cannot run.
const CONTRACT_FILE = new URL(import.meta.resolve('@payhooks/core/service-contract'))
const scripts = new Map<string, string | undefined>()

function script(file: string | URL): string | undefined {
  const key = String(file)
  if (!scripts.has(key)) {
    try {
      scripts.set(key, readFileSync(file, 'utf8'))
    } catch {
      scripts.set(key, undefined)
    }
  }
  return scripts.get(key)
}

/** A module of the dashboard at `path`: `/_sandbox/ui/<name>.js`, or the service contract it imports. */
function moduleAt(path: string): string | undefined {
  if (path === CONTRACT_PATH) return script(CONTRACT_FILE)
  const name = /^\/_sandbox\/ui\/([a-z-]+)\.js$/.exec(path)?.[1]
  return name === undefined ? undefined : script(new URL(`${name}.js`, CLIENT_DIR))
}

const common = { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' }
const PAGE_HEADERS = {
  ...common,
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': `default-src 'none'; script-src 'self' 'sha256-${createHash('sha256').update(IMPORT_MAP).digest('base64')}'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
}

/** The dashboard file served at `path`, if any: the page at `/` and `/_sandbox/ui`, its style sheet and modules. */
export function dashboardAsset(path: string): { text: string; headers: Record<string, string> } | undefined {
  switch (path) {
    case '/':
    case '/_sandbox/ui':
    case '/_sandbox/ui/':
      return { text: PAGE, headers: PAGE_HEADERS }
    case '/_sandbox/ui/app.css':
      return { text: STYLE, headers: { ...common, 'content-type': 'text/css; charset=utf-8' } }
  }
  const text = moduleAt(path)
  return text === undefined
    ? undefined
    : { text, headers: { ...common, 'content-type': 'text/javascript; charset=utf-8' } }
}
