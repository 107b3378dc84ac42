#!/usr/bin/env node
// The compiled command; `npm install` builds it (the workspace's `prepare`).
import { main } from "../dist/main.js"
import { followNpmParent } from "../dist/npm-parent.js"

// Under npx the signals npm passes on stop at the shell npm runs this under (see npm-parent.ts).
followNpmParent()
main(process.argv)
