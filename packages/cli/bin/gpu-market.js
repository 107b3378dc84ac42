#!/usr/bin/env node
// The workspace ships TypeScript sources; tsx loads them so the bin needs no build step.
import { register } from "tsx/esm/api"

register()
await import("../src/main.ts")
