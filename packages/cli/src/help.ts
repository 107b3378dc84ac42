import * as CliConfig from "@effect/cli/CliConfig"
import type * as Command from "@effect/cli/Command"
import * as Descriptor from "@effect/cli/CommandDescriptor"
import * as HelpDoc from "@effect/cli/HelpDoc"
import type * as Span from "@effect/cli/HelpDoc/Span"
import * as HashMap from "effect/HashMap"

/**
 * `--help`, rendered from the commands' own definitions: what the command does, its usage, one
 * line per argument and option (its name and the description given to it), its subcommands and
 * its examples. @effect/cli's own help gives each option a paragraph of boilerplate ("A
 * user-defined piece of text.", "This setting is optional.") around that description and puts a
 * whole usage on one line, so `gpu-market` renders its help itself, the same way for every command.
 */

/** The header of a command's examples inside its description (see `described`). */
const EXAMPLES = "Example"

/**
 * A command's description: one line of what it does (further lines of `text` follow it in its help
 * alone, not in its parent's list of commands), then the command lines that show it, each
 * as a person would type it (`gpu-market tokens create --name Acme --grant rental`).
 */
export const described = (text: string, ...examples: ReadonlyArray<string>): HelpDoc.HelpDoc =>
  HelpDoc.blocks([...text.split("\n").map((line) => HelpDoc.p(line)), HelpDoc.h2(EXAMPLES), ...examples.map((line) => HelpDoc.p(line))])

/** The options every command takes, which @effect/cli and `gpu-market` itself read before the command's own. */
const GLOBAL_OPTIONS: ReadonlyArray<readonly [string, string]> = [
  ["-h, --help", "this help; after a command, that command's"],
  ["--version", "the version of gpu-market"],
  ["--verbose", "with an error, its whole cause below its one line"],
  ["--log-level level", "all, trace, debug, info (the default), warning, error, fatal or none"],
  ["--completions shell", "a completion script for sh, bash, fish or zsh"]
]

const textOf = (span: Span.Span): string => {
  switch (span._tag) {
    case "Text":
    case "URI":
      return span.value
    case "Sequence":
      return textOf(span.left) + textOf(span.right)
    default:
      return textOf(span.value)
  }
}

/** A help document's blocks in order, sequences flattened. */
const blocksOf = (doc: HelpDoc.HelpDoc): ReadonlyArray<HelpDoc.HelpDoc> =>
  doc._tag === "Sequence" ? [...blocksOf(doc.left), ...blocksOf(doc.right)] : doc._tag === "Empty" ? [] : [doc]

/** The blocks under each header (`DESCRIPTION`, `ARGUMENTS`, `OPTIONS`, `Example`), by header. */
const sectionsOf = (doc: HelpDoc.HelpDoc): ReadonlyMap<string, ReadonlyArray<HelpDoc.HelpDoc>> => {
  const sections = new Map<string, Array<HelpDoc.HelpDoc>>()
  let current: Array<HelpDoc.HelpDoc> = []
  for (const block of blocksOf(doc)) {
    if (block._tag === "Header") sections.set(textOf(block.value), current = [])
    else current.push(block)
  }
  return sections
}

const paragraphs = (blocks: ReadonlyArray<HelpDoc.HelpDoc>): ReadonlyArray<string> =>
  blocks.flatMap(blocksOf).flatMap((b) => (b._tag === "Paragraph" ? [textOf(b.value)] : []))

/**
 * Each argument or option as a name and its description. @effect/cli writes an option's help as its
 * value type's paragraph, then the description given to it, then notes of its own (optional,
 * repeated): the second paragraph is the one a person wrote.
 */
const entriesOf = (blocks: ReadonlyArray<HelpDoc.HelpDoc> | undefined): ReadonlyArray<readonly [string, string]> =>
  (blocks ?? []).flatMap(blocksOf).flatMap((b) =>
    b._tag === "DescriptionList" ? b.definitions.map(([name, doc]) => [textOf(name), paragraphs([doc])[1] ?? ""] as const) : [])

/** Lines of `name  description`, the descriptions in one column. */
const table = (rows: ReadonlyArray<readonly [string, string]>): ReadonlyArray<string> => {
  const width = Math.max(...rows.map(([name]) => name.length))
  return rows.map(([name, text]) => `  ${name.padEnd(width)}  ${text}`.trimEnd())
}

/** A command of @effect/cli, as far as its help goes. */
type Described = Pick<Command.Command<string, unknown, unknown, unknown>, "descriptor">

/** A command and its subcommands by name, as the help walks them. */
export interface HelpTree {
  readonly command: Descriptor.Command<unknown>
  readonly subcommands: ReadonlyMap<string, HelpTree>
}

/**
 * The tree of `root`'s commands. @effect/cli hands out a subcommand without its own subcommands,
 * so the commands that have some (`tokens`, `sync`) are given as `groups`, and stand for their names.
 */
export const commandTree = (root: Described, groups: ReadonlyArray<Described>): HelpTree => {
  const nameOf = (command: Descriptor.Command<unknown>) => [...Descriptor.getNames(command)][0]!
  const tree = (command: Descriptor.Command<unknown>): HelpTree => ({
    command,
    subcommands: new Map([...HashMap.entries(Descriptor.getSubcommands(command))].map(([name, sub]) => {
      const group = groups.find((g) => nameOf(g.descriptor) === name)
      return [name, group === undefined ? { command: sub, subcommands: new Map() } : tree(group.descriptor)] as const
    }))
  })
  return tree(root.descriptor)
}

const config = CliConfig.make({ showBuiltIns: false })

/** A command's help, `path` naming it from the top (`["gpu-market", "tokens", "create"]`). */
const render = (node: HelpTree, path: ReadonlyArray<string>, version: string): string => {
  const sections = sectionsOf(Descriptor.getHelp(node.command, config))
  const [summary = "", ...more] = paragraphs(sections.get("DESCRIPTION") ?? [])
  const args = entriesOf(sections.get("ARGUMENTS"))
  const options = entriesOf(sections.get("OPTIONS"))
  const subcommands = [...node.subcommands].sort(([a], [b]) => a.localeCompare(b))
  const top = path.length === 1
  const usage = [
    ...path,
    ...subcommands.length > 0 ? ["<command>"] : [],
    ...options.length > 0 || top ? ["[options]"] : [],
    ...args.map(([name]) => name)
  ].join(" ")
  const lines = [top ? `${path[0]} ${version}: ${summary}` : summary, ...more, "", `Usage: ${usage}`]
  if (subcommands.length > 0) {
    lines.push("", "Commands:", ...table(subcommands.map(([name, sub]) => [name, paragraphs(sectionsOf(Descriptor.getHelp(sub.command, config)).get("DESCRIPTION") ?? [])[0] ?? ""])))
  }
  if (args.length > 0) lines.push("", "Arguments:", ...table(args))
  if (options.length > 0) lines.push("", "Options:", ...table(options))
  if (top) lines.push("", "Options of every command:", ...table(GLOBAL_OPTIONS))
  const examples = paragraphs(sections.get(EXAMPLES) ?? [])
  if (examples.length > 0) lines.push("", examples.length === 1 ? "Example:" : "Examples:", ...examples.map((line) => `  ${line}`))
  return lines.join("\n")
}

/** The command `words` name from the top (words that name no subcommand are passed over), and its path. */
const resolve = (tree: HelpTree, words: ReadonlyArray<string>) => {
  let node = tree
  const path = [...Descriptor.getNames(tree.command)].slice(0, 1)
  for (const word of words) {
    const sub = node.subcommands.get(word)
    if (sub === undefined) continue
    node = sub
    path.push(word)
  }
  return { node, path }
}

/** Whether a command only holds others (`tokens`, `indexes`): no options or arguments of its own. */
const holdsOnly = (node: HelpTree) => {
  const sections = sectionsOf(Descriptor.getHelp(node.command, config))
  return node.subcommands.size > 0 && !sections.has("OPTIONS") && !sections.has("ARGUMENTS")
}

/**
 * The help `args` (the command line after the program's name) asks for, or undefined: `--help` or
 * `-h` before any `--` asks for the help of the command its words name, and so does naming a
 * command that only holds others (`gpu-market tokens`) and nothing else.
 */
export const helpFor = (tree: HelpTree, args: ReadonlyArray<string>, version: string): string | undefined => {
  const end = args.indexOf("--")
  const before = end < 0 ? args : args.slice(0, end)
  const { node, path } = resolve(tree, before)
  const asked = before.includes("--help") || before.includes("-h") || (before.length === path.length - 1 && holdsOnly(node))
  return asked ? render(node, path, version) : undefined
}
