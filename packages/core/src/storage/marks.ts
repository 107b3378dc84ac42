import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { StorageError } from "./errors.js"

/**
 * How far a resumable job (a seed, an import) got, written by the same atomic write as the data
 * it describes: a job killed at any point finds a mark that holds for what is stored, and
 * resumes from it. A write that carries a mark and changes no row still writes the mark.
 */
export interface ProgressMark {
  /** The job's name, e.g. `demo_seeded_through`: one name per job, as stores may share one namespace of marks. */
  readonly name: string
  readonly value: string
}

/** Options of a resumable job's write: the progress mark to write with its data. */
export interface MarkedWrite {
  readonly mark?: ProgressMark
}

/** Reads a store's progress marks, each written with the data it describes. */
export type ReadMark = (name: string) => Effect.Effect<Option.Option<string>, StorageError>

/** `{ mark }` when there is one, for changes typed with `exactOptionalPropertyTypes`. */
export const withMark = (mark: ProgressMark | undefined): { readonly mark?: ProgressMark } =>
  mark === undefined ? {} : { mark }

/** An in-memory store's marks: the map its writes set, and how they are read. */
export const memoryMarks = (): { readonly marks: Map<string, string>; readonly mark: ReadMark } => {
  const marks = new Map<string, string>()
  return { marks, mark: (name) => Effect.sync(() => Option.fromNullable(marks.get(name))) }
}
