/** How many failed checks a receiver diagnoses per second; the rest get `not_diagnosed`. */
export const DIAGNOSES_PER_SECOND = 20

/** A receiver's count of diagnoses in the current second. */
export interface DoctorBudget {
  second: number
  used: number
}

export const doctorBudget = (): DoctorBudget => ({ second: 0, used: 0 })

/**
 * Whether one more diagnosis fits this second. Anyone can post unsigned bodies to the route, and each diagnosis
 * costs about twenty HMACs: the budget keeps a flood from costing much more than the checks themselves.
 */
export function takeDiagnosis(budget: DoctorBudget): boolean {
  const second = Math.floor(Date.now() / 1000)
  if (second !== budget.second) {
    budget.second = second
    budget.used = 0
  }
  return budget.used++ < DIAGNOSES_PER_SECOND
}
