import { randomUUID } from 'node:crypto'

/** A namespace of one test's own for the contract named `name`. */
export const fleetNamespace = (name: string): string => `${name.replace(/[^\w-]/g, '_')}-${randomUUID()}`

/**
 * Instances of one fleet of stores sharing `namespace`: instance(i) is made by `make` and its `init` awaited on first
 * use, and added to `made` (shut down after each test).
 */
export function makeFleet<S extends { init?(): unknown }>(
  namespace: string,
  make: (namespace: string) => S | Promise<S>,
  made: Set<S>,
): (index?: number) => Promise<S> {
  const instances = new Map<number, Promise<S>>()
  return (index = 0): Promise<S> => {
    let instance = instances.get(index)
    if (!instance) {
      instance = (async () => {
        const store = await make(namespace)
        made.add(store)
        await store.init?.()
        return store
      })()
      instances.set(index, instance)
    }
    return instance
  }
}
