import type { CryptoProvider, RawBody } from '../crypto/crypto-provider.js'
import { cryptoProvider, isSignatureShaped } from '../verify/signature.js'
import { byteCandidates } from './candidates.js'
import { HINTS, otherSecretHint, type SignatureHint } from './hints.js'
import { jsonForms } from './json-forms.js'

/** Bodies larger than this are not diagnosed: each candidate costs an HMAC of the whole body. */
export const DOCTOR_MAX_BODY_BYTES = 65_536

/**
 * The payhooks sandbox's default test secret (`defaultSandboxCredentials.testSecret` of `@payhooks/sandbox`), with
 * which it signs a test message sent to a url no subscription has. Public, so the doctor can recognise it.
 */
export const SANDBOX_TEST_SECRET = 'sandbox-test-secret'

/** What {@link diagnoseSignature} examines. */
export interface SignatureDiagnosisInput {
  /** The secrets the receiver holds. */
  secrets: readonly string[]
  /** The exact bytes received (or their text). */
  body: RawBody
  /** The `service-hmac-sha256` header as received. */
  signature: string | null | undefined
  /** Secrets the receiver does not hold but the caller knows of (another subscription's): `unheld_secret` if one signed. */
  otherSecrets?: readonly string[]
}

const encoder = new TextEncoder()

/** The 64 hex characters inside a header that holds more (`sha256=…`, quotes, spaces), when there is exactly one run. */
export function bareDigest(header: string): string | undefined {
  if (header.length > 512) return undefined
  const runs = header.match(/(?<![0-9A-Fa-f])[0-9A-Fa-f]{64}(?![0-9A-Fa-f])/g)
  return runs?.length === 1 ? runs[0] : undefined
}

/**
 * The signature doctor: after a failed check, works out the likely cause by altering the received bytes, header or
 * secret the ways webhook pipelines commonly do and checking whether the altered form verifies. Costs at most about
 * 20 HMACs of the body per secret whatever its shape (no altered form is over three times as long as the body), so
 * call it only once a check failed. Bodies over {@link DOCTOR_MAX_BODY_BYTES} are not examined; JSON over 4 KiB,
 * nested over 32 deep or of over 256 values is not re-formatted, and if nothing else verifies the answer is then
 * `not_diagnosed`.
 * The hint names no secret, signature or body byte: give it to your logs, never to the sender.
 *
 * @example
 * if (!(await verify(secret, body, header))) {
 *   const hint = await diagnoseSignature({ secrets: [secret], body, signature: header })
 *   console.warn(hint.code, hint.message) // body_reserialized the body was re-serialized ...
 * }
 */
export async function diagnoseSignature(
  input: SignatureDiagnosisInput,
  provider: CryptoProvider = cryptoProvider,
): Promise<SignatureHint> {
  const { secrets, otherSecrets } = input
  const matches = async (keys: readonly string[], body: RawBody, signature: string) =>
    keys.length > 0 && (await provider.match(keys, body, signature)) >= 0
  let signature = input.signature ?? ''
  // A plain Uint8Array view of a Buffer: loops over bytes that see both kinds run several times slower in V8.
  const bytes =
    typeof input.body === 'string'
      ? encoder.encode(input.body)
      : new Uint8Array(input.body.buffer, input.body.byteOffset, input.body.byteLength)
  if (!isSignatureShaped(signature)) {
    const bare = bareDigest(signature)
    if (bare === undefined) return HINTS.malformed_header
    if (bytes.length <= DOCTOR_MAX_BODY_BYTES && (await matches(secrets, bytes, bare))) return HINTS.header_prefix
    signature = bare
  }
  if (bytes.length > DOCTOR_MAX_BODY_BYTES) return HINTS.not_diagnosed
  const trimmed = secrets.map((secret) => secret.trim()).filter((secret, i) => secret !== '' && secret !== secrets[i])
  if (await matches(trimmed, bytes, signature)) return HINTS.secret_whitespace
  for (const [code, candidate] of byteCandidates(bytes)) {
    if (await matches(secrets, candidate, signature)) return HINTS[code]
  }
  const json = jsonForms(bytes)
  for (const form of json.forms) {
    if (await matches(secrets, form, signature)) return HINTS.body_reserialized
  }
  if (!secrets.includes(SANDBOX_TEST_SECRET) && (await matches([SANDBOX_TEST_SECRET], bytes, signature))) {
    return HINTS.unheld_secret
  }
  if (otherSecrets && otherSecrets.length > 0) {
    const index = await provider.match(otherSecrets, bytes, signature)
    if (index >= 0) return otherSecretHint(index)
  }
  // Some re-formatted form was not tried: that nothing verified says less than wrong_secret_or_bytes claims.
  return json.complete ? HINTS.wrong_secret_or_bytes : HINTS.not_diagnosed
}
