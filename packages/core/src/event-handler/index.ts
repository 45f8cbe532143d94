export { on, onAny, onError } from './on.js'
export { logVerifiedWith, report, warn } from './report.js'
export { runHandlers } from './run-handlers.js'
export { createEventHandler, type EventHandler } from './state.js'
