/**
 * How a lease is kept among the settings: `<holder>|<expires at, epoch ms>`, read and written by
 * every backend's `SettingsStore.lease` (Redis in Lua, on the same text).
 */

/** The stored value of a lease held by `holder` until `expiresMs`. */
export const leaseValue = (holder: string, expiresMs: number): string => `${holder}|${expiresMs}`

/** Whether `holder` may take the lease stored as `value` (undefined: none) at `nowMs`. */
export const mayTakeLease = (value: string | undefined, holder: string, nowMs: number): boolean => {
  if (value === undefined) return true
  const bar = value.lastIndexOf("|")
  return value.slice(0, bar) === holder || Number(value.slice(bar + 1)) <= nowMs
}
