import { randomBytes, randomInt } from 'node:crypto'
import { ANSWER_LIMIT_MS, RETRY_INTERVAL_MS } from '@payhooks/core'
import { RESELLER_KEY } from './auth.js'
import { type Clock, createManualClock, realClock } from './clock.js'
import type { ResolvedChaos, SandboxCredentials, SandboxMerchant, SandboxReseller } from './types.js'

/** Default lifetime of client tokens: one hour. */
const TOKEN_TTL_MS = 60 * 60 * 1000

/** Chaos settings: how often messages are duplicated or delayed. */
export interface SandboxChaosOptions {
  /**
   * Seed of the pseudo-random choices: the same seed and the same calls give the same chaos.
   * @default a random seed, readable as `sandbox.chaos.seed`
   */
  seed?: number
  /**
   * Share of deliveries whose first send also goes out a second time: half of them together with
   * the first send (concurrently), half after a random delay of up to `maxDelayMs`, whatever the
   * first send's answer.
   * @default 0.2
   */
  duplicateRate?: number
  /**
   * Share of deliveries whose first send is held back a random 1 to `maxDelayMs` ms, so messages
   * overtake each other.
   * @default 0.3
   */
  reorderRate?: number
  /**
   * Longest chaos delay, in clock milliseconds. Below one hour, so chaos never moves the retry grid.
   * @default 2000
   */
  maxDelayMs?: number
}

/** Options of {@link createSandbox}. */
export interface SandboxOptions {
  /**
   * Reseller accounts (`Authorization: reseller <key>`).
   * @default [{ key: '1001|sandbox-reseller-key', merchantIds: [1234, 5678] }]
   */
  resellers?: SandboxReseller[]
  /**
   * Merchant accounts (`Authorization: basic <username>:<apiKey>`).
   * @default merchants 1234 (merchant1234 / sandbox-merchant-key-1234) and 5678 (merchant5678 / sandbox-merchant-key-5678)
   */
  merchants?: SandboxMerchant[]
  /**
   * Secret of test webhooks sent to a url none of the caller's subscriptions uses.
   * @default 'sandbox-test-secret'
   */
  testSecret?: string
  /**
   * Time source of the retry schedule. `'manual'` creates a {@link createManualClock} that moves only with
   * `sandbox.advance`. Messages are stamped `created_at` with the wall clock whatever this clock says, so a
   * receiver on its defaults (which ages events by its own clock) answers them after any advance.
   * @default realClock
   */
  clock?: Clock | 'manual'
  /**
   * Duplicate and reorder deliveries; `true` uses the default {@link SandboxChaosOptions}.
   * @default false
   */
  chaos?: boolean | SandboxChaosOptions
  /**
   * How long a receiver has to answer; later counts as a failure (spec 6.1: 10 seconds).
   * @default 10_000
   */
  deliveryTimeoutMs?: number
  /**
   * Events kept in the log; beyond it the oldest finished ones are dropped.
   * @default 10_000
   */
  logLimit?: number
  /**
   * Lifetime of client tokens.
   * @default 3_600_000 (one hour)
   */
  clientTokenTtlMs?: number
  /**
   * Receives one line per send and the listening banner. Silent without it.
   * @default undefined
   */
  logger?: (line: string) => void
  /**
   * Token of the control routes and the dashboard's data (at least 16 visible ASCII characters).
   * @default a random token, readable as `sandbox.controlToken`
   */
  controlToken?: string
  /**
   * `true`: every control request needs the token. `false`: none does, wherever the sandbox listens.
   * Unset: the token is needed once the sandbox listens on an address other than loopback, and for
   * requests that arrive on such an address (a handler mounted in a server of your own).
   * @default undefined (auto)
   * @example
   * createSandbox({ requireControlToken: true, controlToken: process.env.PAYHOOKS_SANDBOX_TOKEN })
   */
  requireControlToken?: boolean
  /**
   * A file that keeps the subscriptions, with their ids and signature secrets, across restarts: read when the
   * sandbox is created (a missing file starts empty), rewritten after every create, update and delete (atomically,
   * mode 0600, since it holds secrets). Events and deliveries are not kept.
   * @default undefined (subscriptions live in memory only)
   * @example
   * createSandbox({ statePath: '.payhooks-sandbox.json' })
   */
  statePath?: string
}

/**
 * Accounts used when `createSandbox` is given none.
 *
 * @example
 * const [reseller] = defaultSandboxCredentials.resellers
 * await fetch(`${url}/ps/webhook/subscriptions`, { headers: { authorization: `reseller ${reseller.key}` } })
 */
export const defaultSandboxCredentials: Readonly<SandboxCredentials> = Object.freeze({
  resellers: [{ key: '1001|sandbox-reseller-key', merchantIds: [1234, 5678] }],
  merchants: [
    { id: 1234, username: 'merchant1234', apiKey: 'sandbox-merchant-key-1234' },
    { id: 5678, username: 'merchant5678', apiKey: 'sandbox-merchant-key-5678' },
  ],
  testSecret: 'sandbox-test-secret',
})

/** Options of {@link createSandbox} with their defaults applied, once checked. */
export interface ResolvedOptions {
  credentials: SandboxCredentials
  clock: Clock
  chaos: ResolvedChaos | undefined
  deliveryTimeoutMs: number
  clientTokenTtlMs: number
  logLimit: number
  logger: ((line: string) => void) | undefined
  controlToken: string
  requireControlToken: boolean | undefined
  statePath: string | undefined
}

/** Applies the defaults and checks the options; throws a TypeError or RangeError naming the bad one. */
export function resolveOptions(options: SandboxOptions): ResolvedOptions {
  const credentials: SandboxCredentials = {
    resellers: structuredClone(options.resellers ?? defaultSandboxCredentials.resellers),
    merchants: structuredClone(options.merchants ?? defaultSandboxCredentials.merchants),
    testSecret: options.testSecret ?? defaultSandboxCredentials.testSecret,
  }
  checkCredentials(credentials)
  const clock = options.clock === 'manual' ? createManualClock() : (options.clock ?? realClock)
  const chaos = resolveChaos(options.chaos)
  const deliveryTimeoutMs = options.deliveryTimeoutMs ?? ANSWER_LIMIT_MS
  if (!(deliveryTimeoutMs > 0)) throw new RangeError('createSandbox: deliveryTimeoutMs must be positive')
  // Hex, never base64url: a token starting with '-' would read as an option in `--token <value>`.
  const controlToken = options.controlToken ?? randomBytes(20).toString('hex')
  if (typeof controlToken !== 'string' || !/^[\x21-\x7e]{16,}$/.test(controlToken)) {
    throw new TypeError('createSandbox: controlToken must be at least 16 visible ASCII characters, no spaces')
  }
  const { requireControlToken } = options
  if (requireControlToken !== undefined && typeof requireControlToken !== 'boolean') {
    throw new TypeError('createSandbox: requireControlToken must be a boolean')
  }
  const { statePath } = options
  if (statePath !== undefined && (typeof statePath !== 'string' || statePath === '')) {
    throw new TypeError('createSandbox: statePath must be a non-empty file path')
  }
  return {
    statePath,
    credentials,
    clock,
    chaos,
    deliveryTimeoutMs,
    clientTokenTtlMs: options.clientTokenTtlMs ?? TOKEN_TTL_MS,
    logLimit: options.logLimit ?? 10_000,
    logger: options.logger,
    controlToken,
    requireControlToken,
  }
}

function checkCredentials(credentials: SandboxCredentials): void {
  for (const reseller of credentials.resellers) {
    if (typeof reseller.key !== 'string' || !RESELLER_KEY.test(reseller.key)) {
      throw new TypeError('createSandbox: a reseller key is a number, a pipe, then a string, such as 1001|s3cret')
    }
    if (!Array.isArray(reseller.merchantIds) || !reseller.merchantIds.every((id) => Number.isSafeInteger(id))) {
      throw new TypeError('createSandbox: reseller merchantIds must be integers')
    }
  }
  for (const merchant of credentials.merchants) {
    if (
      !Number.isSafeInteger(merchant.id) ||
      !merchant.username ||
      !merchant.apiKey ||
      merchant.username.includes(':')
    ) {
      throw new TypeError('createSandbox: a merchant needs an integer id, a username without ":" and an apiKey')
    }
  }
  if (!credentials.testSecret) throw new TypeError('createSandbox: testSecret must be a non-empty string')
}

function resolveChaos(chaos: SandboxOptions['chaos']): ResolvedChaos | undefined {
  if (!chaos) return undefined
  const options = chaos === true ? {} : chaos
  const resolved: ResolvedChaos = {
    seed: options.seed ?? randomInt(2 ** 31),
    duplicateRate: options.duplicateRate ?? 0.2,
    reorderRate: options.reorderRate ?? 0.3,
    maxDelayMs: options.maxDelayMs ?? 2000,
  }
  const rate = (value: number) => value >= 0 && value <= 1
  if (!Number.isInteger(resolved.seed)) throw new TypeError('createSandbox: chaos.seed must be an integer')
  if (!rate(resolved.duplicateRate) || !rate(resolved.reorderRate)) {
    throw new RangeError('createSandbox: chaos rates must be between 0 and 1')
  }
  if (!(resolved.maxDelayMs >= 1 && resolved.maxDelayMs < RETRY_INTERVAL_MS)) {
    throw new RangeError('createSandbox: chaos.maxDelayMs must be at least 1 and below one hour')
  }
  return resolved
}
