// A CommonJS app: require() gets each package's CommonJS build (dist/cjs), not its ES modules.
const core = require('@payhooks/core')
const { expressWebhooks } = require('@payhooks/express')
const { readNodeBody } = require('@payhooks/core/node')

const builds = ['@payhooks/core', '@payhooks/express', '@payhooks/core/node'].map((id) =>
  require.resolve(id).replace(/^.*node_modules\//, ''),
)
const webhooks = core.createWebhooks({ secret: 'whsec_consumer_app', store: core.memoryStore() })
core.sign('whsec_consumer_app', '{"event_id":"evt_1"}').then(async (signature) => {
  const verified = await core.verify('whsec_consumer_app', '{"event_id":"evt_1"}', signature)
  const exported = [typeof expressWebhooks(webhooks), typeof readNodeBody]
  await webhooks.close()
  console.log(JSON.stringify({ builds, verified, exported }))
})
