import { type StorageError, StorageUnavailable } from "@gpu-market/core"
import { faultText } from "@gpu-market/core/storage"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { Worker } from "node:worker_threads"
import { type SqliteClient, storageError } from "./client.js"

/**
 * The check of a SQLite file's integrity: `PRAGMA quick_check`, which walks every page of every
 * table and index (but, unlike `integrity_check`, does not match each index against its table),
 * run in a worker thread. It reads the whole file, so it takes as long as the file is large: the
 * thread keeps it off the serving thread, and a server starts and serves meanwhile.
 */

/** What the check's thread posts. */
export type IntegrityMessage =
  | { readonly _tag: "checked"; readonly problems: ReadonlyArray<string>; readonly ms: number }
  | { readonly _tag: "failed"; readonly message: string; readonly code: string | undefined }

/** What a check found: `problems` empty for a sound file, else SQLite's words for each (at most `INTEGRITY_PROBLEMS`). */
export interface IntegrityReport {
  readonly problems: ReadonlyArray<string>
  /** How long the check took, ms. */
  readonly ms: number
}

/** Problems a check lists at most: the first few say what is wrong, the rest only how much. */
export const INTEGRITY_PROBLEMS = 10

/**
 * Checks the SQLite file `filename` with `PRAGMA quick_check` in a thread of its own, over a
 * read-only connection: it never writes, so it works on a full disk. A file too damaged to open is
 * reported as a problem; a file that cannot be read (missing, say) fails with a `StorageError`.
 * Interrupted, the thread is stopped.
 */
export const checkIntegrity = (filename: string): Effect.Effect<IntegrityReport, StorageError> =>
  Effect.async<IntegrityReport, StorageError>((resume) => {
    const worker = new Worker(new URL("./integrity-worker.js", import.meta.url), { workerData: { filename, limit: INTEGRITY_PROBLEMS } })
    // A check must not keep a process alive that has nothing else to do.
    worker.unref()
    const failed = (message: string, code?: string) =>
      resume(Effect.fail(storageError("integrity_check", Object.assign(new Error(message), code === undefined ? {} : { code }))))
    worker.once("message", (m: IntegrityMessage) =>
      m._tag === "checked" ? resume(Effect.succeed({ problems: m.problems, ms: m.ms })) : failed(m.message, m.code))
    worker.once("error", (e) => failed(e.message))
    return Effect.promise(() => worker.terminate())
  })

/**
 * A server's check of its file at start (`SqliteOptions.integrityCheck`), forked for the life of
 * the scope: what it found is logged (an error naming the first problems when the file is
 * corrupt), and the returned effect, the file's part of its `StoreReadiness`, fails naming the
 * corruption found: the check's, else the first a statement of the connection met since.
 */
export const integrityWatch = (client: SqliteClient): Effect.Effect<Effect.Effect<void, StorageUnavailable>, never, Scope.Scope> =>
  Effect.gen(function* () {
    const filename = client.filename
    let corruption: string | undefined
    yield* Effect.forkScoped(checkIntegrity(filename).pipe(
      Effect.flatMap(({ problems, ms }) => {
        const took = { file: filename, duration_ms: Math.round(ms) }
        if (problems.length === 0) return Effect.logInfo("integrity check passed").pipe(Effect.annotateLogs(took))
        const count = problems.length === INTEGRITY_PROBLEMS ? `${problems.length} or more` : `${problems.length}`
        corruption = problems.length === 1 ? problems[0]! : `${problems[0]!} (the first of ${count} problems)`
        return Effect.logError("the database file is corrupt; /readyz answers 503 until it is replaced").pipe(Effect.annotateLogs({ ...took, problems }))
      }),
      Effect.catchAll((e) => Effect.logWarning("integrity check could not run").pipe(Effect.annotateLogs({ file: filename, error: e.message })))
    ))
    return Effect.suspend(() => {
      const found = corruption ?? client.corruption()
      return found === undefined
        ? Effect.void
        : Effect.fail(new StorageUnavailable({ detail: `storage is unavailable (${faultText.corrupt}: ${found}); not ready` }))
    })
  })
