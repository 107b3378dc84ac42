import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import { createServer } from "node:net"

const clockTicks = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100
  } catch {
    return 100
  }
})()

/** utime + stime of another process so far, in seconds, from /proc (Linux); undefined elsewhere. */
export const processCpuSeconds = (pid: number | undefined): number | undefined => {
  if (pid === undefined || process.platform !== "linux") return undefined
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    // Fields after the parenthesised command name, which may itself contain spaces.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return (Number(fields[11]) + Number(fields[12])) / clockTicks
  } catch {
    return undefined
  }
}

/** A TCP port free on loopback right now. */
export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = createServer()
    s.on("error", reject)
    s.listen(0, "127.0.0.1", () => {
      const address = s.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      s.close(() => resolve(port))
    })
  })
