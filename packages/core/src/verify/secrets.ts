import { check } from '../validations.js'

/**
 * A secret with a name of your choosing (`'2026-q4'`, a subscription id), reported with its position as
 * {@link VerifiedSecret.label}. Never the secret itself.
 *
 * @example
 * createWebhooks({ secret: [{ secret: process.env.NEW_SECRET!, label: 'sub_new' }, { secret: process.env.OLD_SECRET!, label: 'sub_old' }] })
 */
export interface LabeledSecret {
  readonly secret: string
  readonly label: string
}

/** One secret of a list: the secret, or a {@link LabeledSecret}. */
export type SecretEntry = string | LabeledSecret

/**
 * Which of the receiver's secrets verified a delivery: its position in the `secret` list (or in the resolver's
 * answer), and its label when it was given as a {@link LabeledSecret}. On the handler context as `verifiedWith`, in
 * the log and in telemetry, so an operator can see when an old secret stops being used and retire it.
 */
export interface VerifiedSecret {
  /** Position in the list, from 0 (a single secret is 0). */
  readonly index: number
  /** The label of a {@link LabeledSecret}; absent for a plain string. */
  readonly label?: string
}

/** The strings of a `secret` list and, when any entry is a `LabeledSecret`, what each reports as verifying. */
export interface SecretList {
  readonly secrets: readonly string[]
  readonly verified: readonly VerifiedSecret[] | undefined
}

const isLabeled = (entry: unknown): entry is { secret: unknown; label: unknown } =>
  typeof entry === 'object' && entry !== null && 'secret' in entry

/** The secrets of a `secret` option or resolver answer, or a `TypeError`. */
export function checkSecrets(secret: string | readonly SecretEntry[]): SecretList {
  const list = typeof secret === 'string' ? [secret] : secret
  const valid =
    Array.isArray(list) &&
    list.length > 0 &&
    list.every((entry) =>
      isLabeled(entry)
        ? typeof entry.secret === 'string' && entry.secret !== '' && typeof entry.label === 'string'
        : typeof entry === 'string' && entry !== '',
    )
  check(
    valid,
    'createWebhooks',
    'secret',
    'be a non-empty string, a list of them (or of { secret, label }), or a function',
    TypeError,
  )
  if (!list.some(isLabeled)) return { secrets: list as readonly string[], verified: undefined }
  return {
    secrets: list.map((entry) => (typeof entry === 'string' ? entry : entry.secret)),
    verified: list.map((entry, index) =>
      Object.freeze(typeof entry === 'string' ? { index } : { index, label: entry.label }),
    ),
  }
}

/** Shared, so that telling which unlabeled secret verified allocates nothing per delivery. */
const UNLABELED: readonly VerifiedSecret[] = Array.from({ length: 16 }, (_, index) => Object.freeze({ index }))

/** Which secret of `list` verified, as handlers, logs and telemetry see it: the same object for each delivery. */
export function verifiedSecret(list: SecretList, index: number): VerifiedSecret {
  return list.verified?.[index] ?? UNLABELED[index] ?? Object.freeze({ index })
}
