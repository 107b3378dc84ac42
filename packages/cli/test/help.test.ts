import { assert, describe, it } from "@effect/vitest"
import type { HelpTree } from "../src/help"
import { commands, helpOf } from "../src/main"

/**
 * `--help` of every command, rendered in-process from the same definitions the bin parses with:
 * a person reads it at a glance. Each option is one line of its name and a short description,
 * none of @effect/cli's boilerplate, no line longer than 100 characters, and an example that
 * starts with the command itself. (test/cli.e2e.test.ts runs the bin's `--help` as a user does.)
 */

/** Every command's words from the top: `[]`, `["serve"]`, …, `["tokens", "create"]`. */
const everyCommand = (node: HelpTree, words: ReadonlyArray<string> = []): ReadonlyArray<ReadonlyArray<string>> =>
  [words, ...[...node.subcommands].flatMap(([name, sub]) => everyCommand(sub, [...words, name]))]

/** What @effect/cli writes around each option's description, which this help leaves out. */
const BOILERPLATE = [
  "A user-defined piece of text", "This setting is optional", "may be repeated", "A true or false value", "An integer", "A floating point number",
  "One of the following", "A file", "Defaults to"
]

/** The lines of a help's section, from its `Heading:` line to the next blank line. */
const section = (help: string, heading: RegExp): ReadonlyArray<string> => {
  const lines = help.split("\n")
  const start = lines.findIndex((l) => heading.test(l))
  if (start < 0) return []
  const end = lines.findIndex((l, i) => i > start && l === "")
  return lines.slice(start + 1, end < 0 ? undefined : end)
}

describe("gpu-market --help", () => {
  const all = everyCommand(commands)

  it("covers every command, groups and leaves", () => {
    const names = all.map((words) => words.join(" "))
    for (const name of ["", "serve", "seed", "import", "sync", "sync status", "tokens", "tokens create", "tokens list", "tokens revoke", "indexes", "indexes compute", "check"]) {
      assert.include(names, name)
    }
  })

  for (const words of all) {
    const name = ["gpu-market", ...words].join(" ")
    it(`${name}: one short line per option, no boilerplate, lines of at most 100 characters, an example`, () => {
      const help = helpOf(words)
      for (const line of help.split("\n")) assert.isAtMost(line.length, 100, `${name}: ${line}`)
      for (const phrase of BOILERPLATE) assert.notInclude(help, phrase, name)
      assert.match(help, new RegExp(`^Usage: ${name}( |$)`, "m"))
      const options = section(help, /^Options:$/)
      for (const line of options) {
        // Two spaces, the option and its value's name, at least two spaces, then words.
        assert.match(line, /^ {2}--[a-z-]+( \S+)? {2,}\S.{9,}$/, `${name}: ${line}`)
      }
      const flags = options.map((l) => l.trim().split(" ")[0])
      assert.strictEqual(new Set(flags).size, flags.length, `${name}: each option once`)
      const examples = section(help, /^Examples?:$/)
      assert.isAbove(examples.length, 0, `${name} has an example:\n${help}`)
      for (const example of examples) assert.match(example, new RegExp(`^ {2}${name}( |$)`), `${name}'s example runs it`)
    })
  }

  it("lists each option a command takes, with the description given to it", () => {
    const create = helpOf(["tokens", "create"])
    for (const flag of ["--name", "--id", "--grant", "--indices", "--legacy", "--procurement", "--rate-limit", "--db", "--redis"]) {
      assert.match(create, new RegExp(`^ {2}${flag} `, "m"), flag)
    }
    assert.match(create, /^ {2}--rate-limit integer +data requests per minute; default 600$/m)
    assert.match(helpOf(["tokens"]), /^Commands:\n {2}create +Issue an API token/m)
    assert.match(helpOf([]), /^ {2}--verbose +/m)
  })
})
