let counter = 0

/**
 * A name no other conformance case uses: `label`, the time and a counter. Every case keeps to the
 * rows it names, since one store is shared by the whole suite (and by suites run before it).
 */
export const namespace = (label: string): string => `${label}-${Date.now().toString(36)}-${(counter++).toString(36)}`
