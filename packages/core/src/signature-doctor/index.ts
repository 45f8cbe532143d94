export {
  DOCTOR_BURST_MS,
  DOCTOR_MAX_SOURCES,
  DOCTOR_MS_PER_SECOND,
  DOCTOR_SOURCE_MS_PER_SECOND,
  DoctorBudgets,
} from './budget.js'
export {
  bareDigest,
  DOCTOR_MAX_BODY_BYTES,
  diagnoseSignature,
  SANDBOX_TEST_SECRET,
  type SignatureDiagnosisInput,
} from './diagnose.js'
export { HINTS, type SignatureHint, type SignatureHintCode } from './hints.js'
