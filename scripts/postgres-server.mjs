// A throw-away PostgreSQL server on a free loopback port, in a temporary data directory: for `pnpm test`
// (scripts/test.mjs) and the benchmarks. Debian's binaries (/usr/lib/postgresql/<version>/bin); PostgreSQL
// refuses to run as root, so as root the server runs as the `postgres` user, which owns the directory.
// Tuned for tests, not durability: fsync, synchronous_commit and full_page_writes are off.
import { spawn, spawnSync } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { freePort, startOnFreePort } from './free-port.mjs'

const which = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' }).stdout.trim()

/** The directory holding `initdb` and `postgres`: POSTGRES_BIN_DIR, Debian's newest, or the one on PATH. */
export function postgresBinDir() {
  if (process.env.POSTGRES_BIN_DIR) return process.env.POSTGRES_BIN_DIR
  const root = '/usr/lib/postgresql'
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((version) => existsSync(join(root, version, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : []
  if (versions.length > 0) return join(root, versions[0], 'bin')
  const initdb = which('initdb')
  return initdb ? dirname(initdb) : undefined
}

/** uid/gid of the `postgres` user when we are root (the server refuses root), else nothing to change. */
function serverUser() {
  if (process.getuid?.() !== 0) return {}
  const id = (flag) => Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout.trim())
  const uid = id('-u')
  const gid = id('-g')
  if (!Number.isInteger(uid) || uid === 0) throw new Error('running as root needs a `postgres` user to run PostgreSQL')
  return { uid, gid }
}

/**
 * Starts PostgreSQL from `binDir` and resolves once it accepts connections, with its `url`
 * (postgres://postgres@127.0.0.1:PORT/postgres, trust authentication), `stop()`, synchronous so it can run
 * in an 'exit' handler (immediate shutdown, then the data directory is removed), and `restart()`. `extraSettings`:
 * more `-c` settings (the bindings bench preloads pg_stat_statements).
 */
export async function startPostgres(binDir = postgresBinDir(), extraSettings = {}) {
  if (!binDir)
    throw new Error('PostgreSQL not found: apt-get install postgresql, or set POSTGRES_BIN_DIR or DATABASE_URL')
  return startOnFreePort(() => startOnce(binDir, extraSettings))
}

async function startOnce(binDir, extraSettings) {
  const user = serverUser()
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-postgres-'))
  if (user.uid !== undefined) chownSync(dir, user.uid, user.gid)
  const data = join(dir, 'data')
  const initdb = spawnSync(
    join(binDir, 'initdb'),
    ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions'],
    { encoding: 'utf8', ...user },
  )
  if (initdb.status !== 0) {
    rmSync(dir, { recursive: true, force: true })
    throw new Error(`initdb failed: ${initdb.stderr || initdb.error}`)
  }
  const port = await freePort()
  const settings = {
    listen_addresses: '127.0.0.1',
    unix_socket_directories: '',
    fsync: 'off',
    synchronous_commit: 'off',
    full_page_writes: 'off',
    max_connections: '200',
    ...extraSettings,
  }
  const args = ['-D', data, '-p', String(port), ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`])]
  let proc
  /** Starts the server on the data directory and resolves once it accepts connections. */
  const launch = async () => {
    proc = spawn(join(binDir, 'postgres'), args, { stdio: ['ignore', 'ignore', 'pipe'], ...user })
    const started = proc
    await new Promise((resolve, reject) => {
      let log = ''
      const timer = setTimeout(() => reject(new Error(`postgres did not start: ${log}`)), 20_000)
      const onExit = (code) => {
        clearTimeout(timer)
        reject(new Error(`postgres exited with ${code}: ${log}`))
      }
      started.stderr.on('data', (chunk) => {
        log += chunk
        if (log.includes('ready to accept connections')) {
          clearTimeout(timer)
          started.off('exit', onExit)
          resolve()
        }
      })
      started.on('exit', onExit)
    })
    started.stderr.resume()
  }
  const running = () => proc.exitCode === null && proc.signalCode === null
  const pgCtlStop = (mode) => spawnSync(join(binDir, 'pg_ctl'), ['stop', '-D', data, '-m', mode, '-w', '-s'], user)
  let stopped = false
  const stop = () => {
    if (stopped) return
    stopped = true
    if (running()) pgCtlStop('immediate')
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    await launch()
  } catch (error) {
    stop()
    throw error
  }
  /**
   * Restarts the server as an operator would (`pg_ctl stop -m fast`: every session is ended with 57P01, then a
   * clean start on the same port and data), resolving once it accepts connections again.
   */
  const restart = async () => {
    const exited = new Promise((resolve) => (running() ? proc.once('exit', resolve) : resolve()))
    pgCtlStop('fast')
    await exited
    await launch()
  }
  return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, binDir, stop, restart }
}
