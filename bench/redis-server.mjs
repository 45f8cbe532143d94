// A throw-away redis-server on a free loopback port, for benchmarks run without REDIS_URL.
import { spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export function freePort() {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}

/** Starts redis-server (REDIS_SERVER_BIN or the one on PATH); `stop()` kills it at once and removes its files. */
export async function startRedis() {
  const bin =
    process.env.REDIS_SERVER_BIN || spawnSync('sh', ['-c', 'command -v redis-server']).stdout.toString().trim()
  if (!bin) throw new Error('redis-server not found: install it or set REDIS_URL')
  const port = await freePort()
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-bench-redis-'))
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir]
  const proc = spawn(bin, args, { stdio: ['ignore', 'pipe', 'inherit'] })
  await new Promise((resolve, reject) => {
    let output = ''
    const timer = setTimeout(() => reject(new Error(`redis-server did not start: ${output}`)), 10_000)
    proc.stdout.on('data', (chunk) => {
      output += chunk
      if (output.includes('Ready to accept connections')) {
        clearTimeout(timer)
        resolve()
      }
    })
    proc.on('exit', (code) => reject(new Error(`redis-server exited with ${code}: ${output}`)))
  })
  proc.stdout.resume()
  const exited = once(proc, 'exit')
  return {
    url: `redis://127.0.0.1:${port}`,
    /** Synchronous kill (usable in an 'exit' handler); the promise resolves once the process is gone. */
    stop() {
      if (proc.exitCode === null) proc.kill('SIGKILL')
      rmSync(dir, { recursive: true, force: true })
      return exited
    },
  }
}
