/**
 * `npx gpu-market serve` (`npm exec`) runs the bin under `sh -c`, and npm passes a SIGTERM on to
 * that shell, which dies of it without passing it on: the server would keep running, orphaned.
 * Started by npm (`$npm_command` set), the process therefore watches its parent, and once the
 * parent is gone (its parent pid changed) sends itself the SIGTERM that never reached it, so it
 * shuts down as on any SIGTERM. Started otherwise, nothing is watched: a server started with `&`
 * or by a daemon tool is meant to outlive the shell that started it.
 */

/** How often the parent is looked at: a stop waits at most this long for the watch to notice. */
const WATCH_MS = 500

/** Watches the parent when npm started this process; the watch never keeps the process alive. */
export const followNpmParent = (env: NodeJS.ProcessEnv = process.env): void => {
  if ((env.npm_command ?? "") === "") return
  const parent = process.ppid
  const watch = setInterval(() => {
    if (process.ppid === parent) return
    clearInterval(watch)
    process.kill(process.pid, "SIGTERM")
  }, WATCH_MS)
  watch.unref()
}
