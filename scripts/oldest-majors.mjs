// `node --import ./scripts/oldest-majors.mjs`: the test matrix's pass on the oldest supported majors of the peer
// libraries. Every import of ioredis, bullmq or @hono/node-server in this process (the packages' built dist, the
// test fixtures, the examples) loads the older major installed beside the newest under an npm alias
// (ioredis-5, bullmq-5, @hono/node-server-1 in the root package.json). vitest.config.ts does the same for the
// sources vitest loads itself.
import { register } from 'node:module'

register('./oldest-majors-hooks.mjs', import.meta.url)
