import { afterEach, assert, beforeAll, describe, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { spawnTree, stopAll, type Tree, waitFor } from "./support/crash"
import { alive, groupAlive, holdRequest, logLines, refused } from "./support/ops"
import { freePort } from "./support/process"

/**
 * Graceful shutdown of real processes, however the server was launched and whichever process
 * gets the signal: a request whose body is still coming when the signal lands is answered, no
 * new connection is accepted meanwhile, and every process of the tree exits 0. A request that
 * outlives the shutdown timeout is cut, and the process still exits 0.
 */

const ROOT = resolve(import.meta.dirname, "..")
const BIN = join(ROOT, "packages/cli/bin/gpu-market.js")
/** Generous: the shutdown here never waits for it, and the deadline case sets its own. */
const TIMEOUT_SECONDS = 30

let db: string
let secret: string

beforeAll(() => {
  db = join(mkdtempSync(join(tmpdir(), "gpu-market-shutdown-")), "market.db")
  secret = execFileSync("node", [BIN, "tokens", "create", "--db", db, "--name", "shutdown", "--grant", "rental:all", "--procurement"], {
    encoding: "utf8", stdio: ["ignore", "pipe", "pipe"]
  }).split("\n")[0]!.trim()
})

afterEach(stopAll)

const env = (port: number, extra: Record<string, string> = {}) =>
  ({ ...process.env, PORT: String(port), GPU_MARKET_DB: db, GPU_MARKET_DEMO: "0", GPU_MARKET_LOG_FORMAT: "json", ...extra })

/** Launches and resolves once it listens, with the pid of the node process that serves. */
const launch = async (how: "npm start" | "gpu-market serve" | "npx gpu-market serve", port: number, extra: Record<string, string> = {}) => {
  const serve = ["serve", "--db", db, "--port", String(port), "--shutdown-timeout", String(TIMEOUT_SECONDS)]
  const tree = how === "npm start"
    ? spawnTree("npm", ["start", "--silent"], { cwd: ROOT, env: env(port, { GPU_MARKET_SHUTDOWN_TIMEOUT: String(TIMEOUT_SECONDS), ...extra }) })
    : how === "npx gpu-market serve"
      ? spawnTree("npx", ["gpu-market", ...serve], { cwd: ROOT, env: env(port, extra) })
      : spawnTree("node", [BIN, ...serve], { cwd: ROOT, env: env(port, extra) })
  const listening = () => logLines(tree.stderr()).find((l) => l.msg === "listening")
  await waitFor(`${how} listening`, () => {
    if (!tree.running()) throw new Error(`${how} exited:\n${tree.output()}`)
    return listening() !== undefined
  }, 120_000)
  return { tree, node: Number(listening()!.pid) }
}

/** A procurement body the server reads in full before it can answer (422: no such offer field). */
const held = (port: number) => holdRequest(port, "/supply/procurements", {
  authorization: `Bearer ${secret}`, "content-type": "application/json", "idempotency-key": `held-${port}`
}, "{}")

/** Resolves once the server logged that it stopped accepting. */
const closing = (tree: Tree) =>
  waitFor("the server closing", () => logLines(tree.stderr()).some((l) => l.msg.startsWith("closing the server")), 20_000)

/** The tree's leader exited 0 and nothing of the group, the node process included, is left. */
const allGone = async (tree: Tree, node: number) => {
  const exit = await tree.exited
  assert.deepStrictEqual(exit, { code: 0, signal: null }, tree.output())
  await waitFor("every process of the tree to exit", () => !groupAlive(tree.child.pid!) && !alive(node), 5_000)
  const said = logLines(tree.stderr()).map((l) => l.msg)
  assert.isAbove(said.indexOf("stopped"), said.indexOf("server closed"), said.join("\n"))
  assert.isAbove(said.indexOf("server closed"), -1)
}

describe("graceful shutdown", () => {
  const cases = [
    { how: "npm start", signal: "SIGTERM", to: "npm's own pid" },
    { how: "npm start", signal: "SIGINT", to: "the process group (Ctrl-C)" },
    { how: "npm start", signal: "SIGTERM", to: "the node process" },
    { how: "gpu-market serve", signal: "SIGTERM", to: "its pid" },
    { how: "gpu-market serve", signal: "SIGINT", to: "its pid" }
  ] as const
  for (const c of cases) {
    it(`${c.how}, ${c.signal} to ${c.to}: the request in flight is answered, new connections are refused, the tree exits 0`, { timeout: 180_000 }, async () => {
      const port = await freePort()
      const { node, tree } = await launch(c.how, port)
      const request = await held(port)
      if (c.to === "the process group (Ctrl-C)") tree.signal(c.signal)
      else process.kill(c.to === "the node process" ? node : tree.child.pid!, c.signal)
      await closing(tree)
      assert.isTrue(await refused(port), "a new connection is refused once closing")
      assert.isTrue(tree.running(), "still running while a request is in flight")
      const reply = await request.finish()
      assert.strictEqual(reply?.status, 422, JSON.stringify(reply))
      assert.strictEqual(reply?.headers["connection"], "close")
      assert.strictEqual(JSON.parse(reply!.body).code, "validation_failed")
      await allGone(tree, node)
      const logged = logLines(tree.stderr()).find((l) => l.msg === "request" && l.route === "/supply/procurements")
      assert.strictEqual(logged?.status, 422)
    })
  }

  it("npx gpu-market serve, SIGTERM to npx alone: the request in flight is answered, then the server exits and its port is free", { timeout: 180_000 }, async () => {
    const port = await freePort()
    const { node, tree } = await launch("npx gpu-market serve", port)
    const request = await held(port)
    // npm passes the signal to the shell it runs the bin under, which dies of it without passing it on.
    process.kill(tree.child.pid!, "SIGTERM")
    await closing(tree)
    assert.isTrue(alive(node), "still answering the request in flight")
    const reply = await request.finish()
    assert.strictEqual(reply?.status, 422, JSON.stringify(reply))
    await waitFor("the server to exit", () => !alive(node), 15_000)
    assert.isTrue(await refused(port), "the port is free")
    assert.include(logLines(tree.stderr()).map((l) => l.msg), "stopped")
  })

  it("a request still in flight at the shutdown timeout is cut, and the process exits 0", { timeout: 180_000 }, async () => {
    const port = await freePort()
    const { node, tree } = await launch("npm start", port, { GPU_MARKET_SHUTDOWN_TIMEOUT: "1" })
    const request = await held(port)
    process.kill(tree.child.pid!, "SIGTERM")
    // The body never comes: the connection is cut, unanswered, once the second is up.
    const received = await request.closed
    assert.notMatch(received, /HTTP\/1\.1 [2-5]\d\d/, "no answer to a cut request")
    await allGone(tree, node)
    const cut = logLines(tree.stderr()).find((l) => l.msg === "requests cut at the shutdown timeout")
    assert.strictEqual(cut?.cut, 1)
  })
})
