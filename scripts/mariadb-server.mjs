// A throw-away MariaDB server on a free loopback port, in a temporary data directory: for `pnpm test`
// (scripts/test.mjs, scripts/test-services.mjs) and the benchmarks. Debian's `mariadb-server` (mariadbd).
// Fast to start (about 2 s): an empty data directory and --skip-grant-tables instead of mariadb-install-db (which
// fills the system tables, some 5 s more), so any user connects without a password; the tests connect as root to
// the database `payhooks`, created once the server answers. Tuned for tests, not durability: no fsync at commit.
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createConnection } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, startOnFreePort } from './free-port.mjs'

const which = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' }).stdout.trim()

/** The server binary: MARIADBD_BIN, Debian's /usr/sbin/mariadbd, or mariadbd (or mysqld) on PATH. */
export function mariadbBin() {
  if (process.env.MARIADBD_BIN) return process.env.MARIADBD_BIN
  for (const path of ['/usr/sbin/mariadbd', '/usr/sbin/mysqld']) if (existsSync(path)) return path
  return which('mariadbd') || undefined
}

/** Whether the server at `port` sends its handshake (it does once it accepts connections). */
function greets(port) {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port })
    const done = (ok) => {
      socket.destroy()
      resolve(ok)
    }
    socket.once('data', (chunk) => done(chunk.length > 4 && chunk[4] === 10))
    socket.once('error', () => done(false))
    socket.setTimeout(1000, () => done(false))
  })
}

/** `database` created through the `mariadb` client, which speaks the protocol for us. */
function createDatabase(port, database) {
  const client = which('mariadb') || which('mysql')
  const created = spawnSync(
    client,
    ['--no-defaults', '-h127.0.0.1', `-P${port}`, '-uroot', '-e', `CREATE DATABASE IF NOT EXISTS ${database}`],
    { encoding: 'utf8' },
  )
  if (created.status !== 0) throw new Error(`CREATE DATABASE failed: ${created.stderr || created.error}`)
}

/**
 * Starts MariaDB and resolves once it accepts connections and has the database `payhooks`, with its `url`
 * (mysql://root@127.0.0.1:PORT/payhooks) and `stop()`, synchronous so it can run in an 'exit' handler (the server
 * killed, then its directory removed).
 */
export async function startMariadb(bin = mariadbBin()) {
  if (!bin) throw new Error('MariaDB not found: apt-get install mariadb-server, or set MARIADBD_BIN or MYSQL_URL')
  return startOnFreePort(() => startOnce(bin))
}

async function startOnce(bin) {
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-mariadb-'))
  const data = join(dir, 'data')
  mkdirSync(data)
  const port = await freePort()
  const args = [
    '--no-defaults',
    `--datadir=${data}`,
    `--socket=${join(dir, 'mariadb.sock')}`,
    `--pid-file=${join(dir, 'mariadb.pid')}`,
    `--log-error=${join(dir, 'error.log')}`,
    `--port=${port}`,
    '--bind-address=127.0.0.1',
    '--skip-networking=0',
    '--skip-grant-tables',
    '--skip-name-resolve',
    '--user=root',
    '--innodb-buffer-pool-size=64M',
    '--innodb-log-file-size=32M',
    '--innodb-flush-log-at-trx-commit=0',
    '--innodb-doublewrite=0',
    '--max-connections=300',
    '--character-set-server=utf8mb4',
    '--collation-server=utf8mb4_unicode_ci',
  ]
  const proc = spawn(bin, args, { stdio: 'ignore' })
  let stopped = false
  const stop = () => {
    if (stopped) return
    stopped = true
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  }
  const log = () => {
    try {
      return readFileSync(join(dir, 'error.log'), 'utf8').slice(-2000)
    } catch {
      return ''
    }
  }
  try {
    const started = Date.now()
    while (!(await greets(port))) {
      if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`mariadbd exited: ${log()}`)
      if (Date.now() - started > 30_000) throw new Error(`mariadbd did not start: ${log()}`)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    createDatabase(port, 'payhooks')
  } catch (error) {
    stop()
    throw error
  }
  return { url: `mysql://root@127.0.0.1:${port}/payhooks`, bin, stop }
}
