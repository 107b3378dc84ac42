import Database from "better-sqlite3"
import { parentPort, workerData } from "node:worker_threads"
import { faultOf } from "./client.js"
import type { IntegrityMessage } from "./integrity.js"

/**
 * The integrity check's thread (`checkIntegrity`): `PRAGMA quick_check` over a read-only
 * connection of its own, which reads every page of the file, so the thread that serves never
 * waits for it.
 */

const { filename, limit } = workerData as { readonly filename: string; readonly limit: number }

const check = (): IntegrityMessage => {
  const started = performance.now()
  let db: Database.Database | undefined
  try {
    db = new Database(filename, { readonly: true, fileMustExist: true, timeout: 5000 })
    const lines = db.pragma(`quick_check(${limit})`, { simple: false }) as Array<{ readonly quick_check: string }>
    // A result may hold several problems, one a line, under a heading naming the schema ("*** in database main ***").
    const problems = lines.flatMap((l) => l.quick_check.split("\n")).filter((l) => l !== "ok" && !l.startsWith("*** "))
    return { _tag: "checked", problems, ms: performance.now() - started }
  } catch (e) {
    // A file too damaged to open or walk is corrupt; anything else is the storage's trouble.
    const message = e instanceof Error ? e.message : String(e)
    return faultOf(e) === "corrupt"
      ? { _tag: "checked", problems: [message], ms: performance.now() - started }
      : { _tag: "failed", message, code: e instanceof Error ? (e as NodeJS.ErrnoException).code : undefined }
  } finally {
    db?.close()
  }
}

parentPort!.postMessage(check())
