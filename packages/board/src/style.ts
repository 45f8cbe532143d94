export const STYLE = `:root {
  --ink: #1d2330; --muted: #667085; --line: #e3e7ee; --bg: #f6f7f9; --card: #fff;
  --ok: #12805c; --ok-bg: #e3f5ec; --fail: #c4320a; --fail-bg: #fdebe6; --wait: #9a6700; --wait-bg: #fff4d6;
  --accent: #3b5bdb; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink);
}
* { box-sizing: border-box; }
[hidden] { display: none !important; }
body { margin: 0; background: var(--bg); }
code, pre, .id { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 12.5px; }
header { display: flex; flex-wrap: wrap; align-items: center; gap: 12px 22px; padding: 12px 24px; background: #1d2330; color: #fff; }
header h1 { margin: 0; font-size: 18px; font-weight: 650; }
header h1 span { font-weight: 400; color: #b7c3ff; }
nav { display: flex; gap: 14px; }
nav a { color: #c9d2ea; text-decoration: none; padding: 3px 0; border-bottom: 2px solid transparent; }
nav a[aria-current="page"] { color: #fff; border-bottom-color: #b7c3ff; }
.mode { margin-left: auto; font-size: 12px; padding: 2px 10px; border-radius: 999px; background: #3a4254; color: #ffd27a; }
.zone { margin-left: auto; font: inherit; font-size: 12px; padding: 2px 10px; border: 1px solid #4a5368; border-radius: 999px; background: transparent; color: #dfe5ff; cursor: pointer; }
.mode:not([hidden]) + .zone { margin-left: 0; }
.notice { margin: 0; padding: 8px 24px; background: #e8edff; }
.notice[data-kind="error"] { background: var(--fail-bg); color: var(--fail); }
.notice[data-kind="ok"] { background: var(--ok-bg); color: var(--ok); }
main { padding: 20px 24px; }
h2 { font-size: 16px; margin: 0 0 12px; }
h3 { font-size: 14px; margin: 16px 0 8px; }
.panel { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 14px 16px; margin-bottom: 16px; }
.panel.banner { border-color: #d97706; border-width: 2px; }
#pauses ul, #paused-banner ul { list-style: none; padding: 0; }
#pauses li span { display: inline-block; min-width: 18em; }
button { font: inherit; font-size: 13px; padding: 5px 12px; border-radius: 6px; border: 1px solid #c5cbd6; background: #fff; color: var(--ink); cursor: pointer; }
button:hover:not(:disabled) { border-color: var(--accent); color: var(--accent); }
button:disabled { opacity: .5; cursor: default; }
button.primary { background: var(--accent); border-color: var(--accent); color: #fff; }
button.primary:hover:not(:disabled) { background: #2c48b8; border-color: #2c48b8; color: #fff; }
button.danger { color: var(--fail); border-color: #f0b8a8; }
.filters { display: flex; flex-wrap: wrap; gap: 8px; margin: 0 0 12px; align-items: center; }
.filters select, .filters input { font: inherit; font-size: 13px; padding: 5px 7px; border: 1px solid #c5cbd6; border-radius: 6px; background: #fff; color: var(--ink); }
.filters label { font-size: 12px; color: var(--muted); display: flex; gap: 4px; align-items: center; }
.actions { display: flex; flex-wrap: wrap; gap: 8px; margin: 0 0 12px; align-items: center; }
.confirm { background: var(--wait-bg); color: #5c3d00; border-radius: 8px; padding: 8px 12px; display: flex; gap: 10px; align-items: center; flex-wrap: wrap; }
table { width: 100%; border-collapse: collapse; background: var(--card); border: 1px solid var(--line); border-radius: 10px; font-size: 13px; }
th { text-align: left; font-weight: 500; color: var(--muted); border-bottom: 1px solid var(--line); padding: 8px 10px; }
td { padding: 8px 10px; border-bottom: 1px solid #f0f2f5; vertical-align: top; }
td.reason { max-width: 420px; overflow-wrap: anywhere; }
td a { color: var(--accent); text-decoration: none; }
.badge { font-size: 11.5px; font-weight: 600; padding: 1px 8px; border-radius: 999px; white-space: nowrap; }
.code-schema_mismatch { background: #efe7ff; color: #5b2bb5; }
.code-handler_failed { background: var(--fail-bg); color: var(--fail); }
.code-stale_event { background: var(--wait-bg); color: var(--wait); }
.status-replayed { background: var(--ok-bg); color: var(--ok); }
.status-parked { background: var(--line); color: var(--muted); }
.pager { display: flex; gap: 10px; align-items: center; margin-top: 12px; color: var(--muted); }
.empty { color: var(--muted); }
h2.id { font-size: 15px; }
.panel .actions { margin: 12px 0 0; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.hint { background: #e8edff; border-radius: 8px; padding: 8px 12px; margin: 12px 0 0; }
pre.body { background: #0f1420; color: #e6e9f0; padding: 12px 14px; border-radius: 8px; overflow: auto; max-height: 480px; white-space: pre-wrap; overflow-wrap: anywhere; }
.tabs { display: flex; gap: 6px; margin-bottom: 8px; }
.tabs button[aria-pressed="true"] { background: var(--ink); color: #fff; border-color: var(--ink); }
.result { margin: 10px 0 0; }
.result[data-kind="ok"] { color: var(--ok); }
.result[data-kind="warning"] { color: var(--wait); }
.result[data-kind="error"] { color: var(--fail); }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(190px, 1fr)); gap: 12px; margin-bottom: 16px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 12px 14px; }
.card .value { font-size: 24px; font-weight: 650; }
.card .label { color: var(--muted); font-size: 12px; }
.check.ok::before { content: "●"; color: var(--ok); margin-right: 6px; }
.check.fail::before { content: "●"; color: var(--fail); margin-right: 6px; }
.check.warn::before { content: "●"; color: var(--wait); margin-right: 6px; }
#health ul { list-style: none; margin: 0; padding: 0; }
#health li { padding: 3px 0; }
.note { color: var(--muted); font-size: 12px; }
.bars { display: flex; align-items: flex-end; gap: 1px; height: 48px; padding: 2px 0; border-bottom: 1px solid var(--line); }
.bars span { flex: 1 1 0; min-width: 2px; background: var(--accent); border-radius: 1px 1px 0 0; }
td.chart { width: 45%; min-width: 220px; }
#instance .cards { margin-top: 10px; grid-template-columns: repeat(auto-fill, minmax(160px, 1fr)); }
#instance table { margin-bottom: 8px; }
.search input[type="search"] { flex: 1 1 420px; max-width: 560px; font-size: 14px; padding: 7px 10px; }
.http-ok { background: var(--ok-bg); color: var(--ok); }
.http-fail { background: var(--fail-bg); color: var(--fail); }
.http-none { background: var(--bg); color: var(--muted); }
.outcome { background: var(--line); color: var(--ink); font-weight: 500; }
.outcome-processed { background: var(--ok-bg); color: var(--ok); }
.outcome-handler_failed, .outcome-handler_timeout, .outcome-store_unavailable, .outcome-deadline_exceeded { background: var(--fail-bg); color: var(--fail); }
.outcome-parked, .outcome-in_progress, .outcome-stale_event, .outcome-schema_mismatch { background: var(--wait-bg); color: var(--wait); }
#dead-letter { margin-top: 14px; }
#dead-letter a { color: var(--accent); }
.progress { display: flex; gap: 10px; align-items: center; flex-wrap: wrap; }
.progress progress { width: 220px; }
`
