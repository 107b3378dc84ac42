#!/usr/bin/env node
// The compiled command; `npm install` builds it (the workspace's `prepare`).
import { main } from "../dist/main.js"

main(process.argv)
