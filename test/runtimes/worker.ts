// The scenario as a Worker: bundled with esbuild and run by workerd through Miniflare, without nodejs_compat.
import { runScenario } from './scenario.js'

export default {
  async fetch(request: Request): Promise<Response> {
    return Response.json(await runScenario(request.url))
  },
}
