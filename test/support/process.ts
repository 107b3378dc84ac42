import { type ChildProcess, spawn } from "node:child_process"
import { createServer } from "node:net"

/** A free loopback port. */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => (typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no port"))))
    })
  })

/** A started child process and everything it printed so far. */
export interface Started {
  readonly child: ChildProcess
  readonly output: () => string
  readonly stop: () => Promise<void>
}

/** Starts a command and resolves once its output matches `ready`; fails after `timeoutMs`. */
export const startUntil = (command: string, args: ReadonlyArray<string>, options: { readonly cwd: string; readonly env: NodeJS.ProcessEnv; readonly ready: RegExp; readonly timeoutMs: number }): Promise<Started> =>
  new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ["ignore", "pipe", "pipe"], detached: true })
    let output = ""
    const stop = () => new Promise<void>((done) => {
      if (child.exitCode !== null || child.signalCode !== null) return done()
      child.once("exit", () => done())
      try { process.kill(-child.pid!, "SIGTERM") } catch { done() }
    })
    const timer = setTimeout(() => {
      void stop()
      reject(new Error(`not ready after ${options.timeoutMs} ms:\n${output}`))
    }, options.timeoutMs)
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      if (options.ready.test(output)) {
        clearTimeout(timer)
        resolve({ child, output: () => output, stop })
      }
    }
    child.stdout!.on("data", onData)
    child.stderr!.on("data", onData)
    child.once("exit", (code) => {
      clearTimeout(timer)
      reject(new Error(`exited with ${code} before ready:\n${output}`))
    })
  })

/** Waits until `check` holds (a rejection counts as not yet), polling every 25 ms; fails after `timeoutMs` naming `what`. */
export const until = async (what: string, check: () => boolean | Promise<boolean>, timeoutMs: number) => {
  const deadline = Date.now() + timeoutMs
  while (!(await Promise.resolve().then(check).catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}
