export { DOCTOR_BURST_MS, DOCTOR_MS_PER_SECOND, type DoctorBudget, doctorBudget, withinBudget } from './budget.js'
export {
  bareDigest,
  DOCTOR_MAX_BODY_BYTES,
  diagnoseSignature,
  SANDBOX_TEST_SECRET,
  type SignatureDiagnosisInput,
} from './diagnose.js'
export { HINTS, type SignatureHint, type SignatureHintCode } from './hints.js'
