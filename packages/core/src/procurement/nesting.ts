import { CST, Parser } from "yaml"
import type { ParameterIssue } from "../errors.js"

/**
 * How deep a request body may nest: parsers, decoders and error formatters recurse once per
 * level, and a 16 KiB body can nest thousands of levels deep, enough to exhaust the stack (a
 * 500, or a "Maximum call stack size exceeded" in a problem's detail). No request the service
 * takes nests more than three levels, so the bound refuses nothing real. Both checks below walk
 * with an explicit stack of their own: they cannot overflow the stack they protect.
 */

/** Most levels of arrays and objects (sequences and mappings) a request body may nest. */
export const MAX_BODY_DEPTH = 64

/** The issue a body nested deeper than `MAX_BODY_DEPTH` is refused with. */
export const tooDeep: ParameterIssue = { parameter: "body", message: `nested more than ${MAX_BODY_DEPTH} levels deep` }

/** Whether a value (parsed JSON, composed YAML, whatever a caller passes) nests deeper than `MAX_BODY_DEPTH`; a cycle does. */
export const valueTooDeep = (value: unknown): boolean => {
  const pending: Array<readonly [value: unknown, depth: number]> = [[value, 0]]
  while (pending.length > 0) {
    const [v, depth] = pending.pop()!
    if (typeof v !== "object" || v === null) continue
    if (depth === MAX_BODY_DEPTH) return true
    for (const child of Array.isArray(v) ? v : Object.values(v)) pending.push([child, depth + 1])
  }
  return false
}

/**
 * Whether YAML text nests deeper than `MAX_BODY_DEPTH`, read from its concrete syntax tree:
 * `yaml`'s parser builds that without recursing, and its composer, which does recurse, never
 * sees a body this refuses. Flow (`[`, `{`) and block collections count alike; a complex key
 * nests inside its mapping like a value.
 */
export const yamlTooDeep = (text: string): boolean => {
  const pending: Array<readonly [token: CST.Token | null | undefined, depth: number]> = []
  for (const token of new Parser().parse(text)) if (token.type === "document") pending.push([token.value, 0])
  while (pending.length > 0) {
    const [token, depth] = pending.pop()!
    if (!CST.isCollection(token)) continue
    if (depth === MAX_BODY_DEPTH) return true
    for (const item of token.items) pending.push([item.key, depth + 1], [item.value, depth + 1])
  }
  return false
}
