// The sandbox's subscriptions (and their secrets) kept in a file across restarts, so a receiver configured with a
// subscription's signature_secret keeps verifying after `payhooks sandbox` is stopped and started again.
import { randomBytes } from 'node:crypto'
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { hostname } from 'node:os'
import type { SandboxSubscription } from './types.js'

const VERSION = 1

function refuse(path: string, why: string): never {
  throw new TypeError(
    `createSandbox: statePath ${path} is not a sandbox state file (${why}); move it away to start afresh`,
  )
}

function checkSubscription(path: string, value: unknown, index: number): SandboxSubscription {
  const s = value as Record<string, unknown>
  const where = `subscriptions[${index}]`
  if (typeof s !== 'object' || s === null) refuse(path, `${where} is not an object`)
  for (const field of ['id', 'url', 'signature_secret'] as const) {
    if (typeof s[field] !== 'string' || s[field] === '') refuse(path, `${where}.${field} is not a non-empty string`)
  }
  if (!Array.isArray(s.event_types) || !s.event_types.every((type) => typeof type === 'string')) {
    refuse(path, `${where}.event_types is not a list of strings`)
  }
  if (typeof s.is_active !== 'boolean') refuse(path, `${where}.is_active is not a boolean`)
  const common = {
    id: s.id as string,
    url: s.url as string,
    event_types: [...(s.event_types as string[])],
    is_active: s.is_active,
    signature_secret: s.signature_secret as string,
  }
  if (s.scope === 'reseller' && typeof s.resellerKey === 'string') {
    return { ...common, scope: 'reseller', resellerKey: s.resellerKey }
  }
  if (s.scope === 'merchant' && Number.isSafeInteger(s.merchantId)) {
    return { ...common, scope: 'merchant', merchantId: s.merchantId as number }
  }
  return refuse(path, `${where} has no reseller key or merchant id for its scope`)
}

/** The subscriptions kept at `path`; none when the file does not exist yet. Throws on a file that is not one. */
export function loadState(path: string): SandboxSubscription[] {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    if ((error as { code?: string }).code === 'ENOENT') return []
    throw new TypeError(
      `createSandbox: cannot read statePath ${path} (${(error as { code?: string }).code ?? 'error'})`,
    )
  }
  let state: unknown
  try {
    state = JSON.parse(text)
  } catch {
    refuse(path, 'not JSON')
  }
  const { version, subscriptions } = (state ?? {}) as { version?: unknown; subscriptions?: unknown }
  if (version !== VERSION) refuse(path, `version ${String(version)}, expected ${VERSION}`)
  if (!Array.isArray(subscriptions)) refuse(path, 'no subscriptions list')
  return subscriptions.map((value, index) => checkSubscription(path, value, index))
}

/**
 * Writes `subscriptions` to `path` atomically (a temporary file in the same folder, then a rename, so a crash
 * leaves the old file or the new one, never half of one), readable by its owner only: it holds secrets.
 */
export function saveState(path: string, subscriptions: readonly SandboxSubscription[]): void {
  const temporary = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`
  const text = `${JSON.stringify({ version: VERSION, subscriptions }, null, 2)}\n`
  try {
    writeFileSync(temporary, text, { mode: 0o600, flag: 'wx' })
    renameSync(temporary, path)
  } catch (error) {
    rmSync(temporary, { force: true })
    throw error
  }
}

/** Whether process `pid` of this host runs (EPERM: it runs as another user). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as { code?: string }).code === 'EPERM'
  }
}

/** The holder a lock file names, or `undefined` when it names none (left half-written by a crash). */
function lockHolder(lockPath: string): { pid: number; host: string } | undefined {
  try {
    const { pid, host } = JSON.parse(readFileSync(lockPath, 'utf8')) as { pid?: unknown; host?: unknown }
    return Number.isSafeInteger(pid) && typeof host === 'string' ? { pid: pid as number, host } : undefined
  } catch {
    return undefined
  }
}

/**
 * Takes `<path>.lock` for this sandbox, so a second sandbox given the same state file is refused instead of
 * overwriting the first one's subscriptions and secrets with its own (each rewrites the whole file). A lock left
 * by a process of this host that no longer runs is taken over. Returns the release, also run at process exit.
 */
export function lockState(path: string): () => void {
  const lockPath = `${path}.lock`
  const mine = `${JSON.stringify({ pid: process.pid, host: hostname() })}\n`
  for (let attempt = 0; ; attempt++) {
    try {
      writeFileSync(lockPath, mine, { mode: 0o600, flag: 'wx' })
      break
    } catch (error) {
      const code = (error as { code?: string }).code
      if (code !== 'EEXIST') throw new TypeError(`createSandbox: cannot write statePath ${path} (${code ?? 'error'})`)
      const holder = lockHolder(lockPath)
      const stale = holder === undefined || (holder.host === hostname() && !running(holder.pid))
      if (!stale || attempt > 0) {
        const by = holder ? ` (pid ${holder.pid} on ${holder.host})` : ''
        throw new TypeError(
          `createSandbox: statePath ${path} is in use by another sandbox${by}; stop it, or give this one another ` +
            `state file (if none runs, delete ${lockPath})`,
        )
      }
      rmSync(lockPath, { force: true })
    }
  }
  const release = () => {
    process.off('exit', release)
    try {
      if (readFileSync(lockPath, 'utf8') === mine) rmSync(lockPath, { force: true })
    } catch {}
  }
  process.on('exit', release)
  return release
}
