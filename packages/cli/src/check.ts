import * as Command from "@effect/cli/Command"
import * as SqliteStorage from "@gpu-market/storage-sqlite"
import * as Console from "effect/Console"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { storageOptions } from "./options.js"
import { described } from "./help.js"
import { UsageError } from "./output.js"
import { sqliteFileOf } from "./storage.js"

/**
 * `gpu-market check`: whether a SQLite file is sound, by `PRAGMA quick_check`, which reads every
 * page, so it takes as long as the file is large (a server runs the same check in the background
 * when it starts). It opens the file read-only: it never writes, so it also runs on a full disk and
 * beside a running server.
 */

/** The file is corrupt: the problems are listed on stdout. */
export class CorruptFile extends Data.TaggedError("CorruptFile")<{ readonly message: string }> {}

/** `gpu-market check`. */
export const checkCommand = Command.make("check", storageOptions, (o) =>
  Effect.gen(function* () {
    const file = yield* Option.match(sqliteFileOf(o), {
      onNone: () => new UsageError({ message: "check reads a SQLite file (--db); the storage named is Redis, which keeps none" }),
      onSome: Effect.succeed
    })
    const { problems, ms } = yield* SqliteStorage.checkIntegrity(file)
    const took = ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`
    if (problems.length === 0) return yield* Console.log(`${file}: sound (PRAGMA quick_check found no problem, in ${took})`)
    yield* Console.log([`${file}: corrupt (PRAGMA quick_check, in ${took}):`, ...problems.map((p) => `  ${p}`)].join("\n"))
    const more = problems.length === SqliteStorage.INTEGRITY_PROBLEMS ? `the first ${problems.length} problems` : `${problems.length} problem(s)`
    return yield* new CorruptFile({ message: `${file} is corrupt (${more} listed above); restore it from a backup, or serve from a sound copy` })
  })
).pipe(Command.withDescription(described(
  "Check a SQLite file's integrity (PRAGMA quick_check, read-only).\nIt reads the whole file. Exit 0 when sound, 1 when corrupt, with its problems.",
  "gpu-market check --db ./data/market.db"
)))
