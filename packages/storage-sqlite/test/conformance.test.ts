import { afterAll } from "@effect/vitest"
import { suite } from "@gpu-market/storage-testkit"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { layer } from "../src/internal"

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gpu-market-sqlite-conformance-"))
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

suite("sqlite", layer({ filename: path.join(dir, "market.db") }))
