import { SignatureError } from '../errors/index.js'
import { SIGNATURE_HEADER } from '../service-contract.js'
import type { HeaderLookup } from '../types.js'

/** The 401 of a request without a signature header: the same error whether refused early or by verification. */
export const missingSignature = (): SignatureError =>
  new SignatureError('missing_signature', `missing ${SIGNATURE_HEADER} header`)

/**
 * Whether a POST (or a delivery whose transport already routed on the method) carries no signature header, so it
 * can be refused before its body is read: nothing it sends can be verified, and reading it would let a sender
 * without the secret hold a connection and a buffer up to the deadline.
 */
export const isUnsigned = (method: string | undefined, getHeader: HeaderLookup): boolean =>
  (method === undefined || method === 'POST') && !getHeader(SIGNATURE_HEADER)
