/**
 * hookbox for OpenCode: each tool call, and each tool's result, goes past a
 * hookbox plugin stack before OpenCode uses it.
 *
 * `hookbox hook opencode --plugins DIR --print-config` prints this file with
 * its command filled in; save it as `.opencode/plugins/hookbox.ts` (one
 * project) or `~/.config/opencode/plugins/hookbox.ts` (every project). With
 * `HOOKBOX_URL` set (and `HOOKBOX_TOKEN`, one of the server's tokens), it
 * asks `hookbox serve` at `$HOOKBOX_URL/opencode/hook` instead.
 *
 * The rules are hookbox's (host/agents/src/opencode.rs); this file only
 * carries OpenCode's objects there and does what the answer says. It fails
 * closed: when hookbox cannot be asked, or answers with anything but its
 * JSON, the tool does not run (or, after it ran, its output is withheld).
 */

import { spawn } from "node:child_process"

const COMMAND: string[] = ["hookbox", "hook", "opencode", "--plugins", "PLUGIN_DIR"]
const TIMEOUT_MS = 30_000

type Answer = { block?: string; args?: Record<string, unknown>; result?: Record<string, unknown> }

/** The command's stdout for `body` on its stdin. */
function run(body: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(COMMAND[0], COMMAND.slice(1), { stdio: ["pipe", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`\`${COMMAND.join(" ")}\` did not answer within ${TIMEOUT_MS / 1000} s`))
    }, TIMEOUT_MS)
    child.stdout.on("data", (d) => (stdout += d))
    child.stderr.on("data", (d) => (stderr += d))
    child.on("error", (e) => {
      clearTimeout(timer)
      reject(new Error(`cannot run \`${COMMAND[0]}\` (${e.message}); is hookbox installed there?`))
    })
    child.on("close", (code) => {
      clearTimeout(timer)
      if (code === 0) resolve(stdout)
      else reject(new Error(`\`${COMMAND.join(" ")}\` exited with ${code}: ${stderr.trim()}`))
    })
    child.stdin.on("error", () => {}) // a command that exits first is reported by "close"
    child.stdin.end(body)
  })
}

/** `hookbox serve`'s answer for `body`. */
async function post(body: string): Promise<string> {
  const url = `${process.env.HOOKBOX_URL!.replace(/\/+$/, "")}/opencode/hook`
  const headers: Record<string, string> = { "content-type": "application/json" }
  if (process.env.HOOKBOX_TOKEN) headers.authorization = `Bearer ${process.env.HOOKBOX_TOKEN}`
  const response = await fetch(url, { method: "POST", headers, body, signal: AbortSignal.timeout(TIMEOUT_MS) })
  if (!response.ok) throw new Error(`${url} answered ${response.status}: ${(await response.text()).trim()}`)
  return response.text()
}

/** hookbox's answer to one hook; a block whenever there is none. */
async function ask(hook: string, input: unknown, output: unknown): Promise<Answer> {
  const body = JSON.stringify({ hook, input, output })
  let text: string
  try {
    text = process.env.HOOKBOX_URL ? await post(body) : await run(body)
  } catch (e) {
    return { block: `hookbox: blocked: ${(e as Error).message}` }
  }
  try {
    const answer = JSON.parse(text)
    if (answer !== null && typeof answer === "object" && !Array.isArray(answer)) return answer
  } catch {}
  return { block: `hookbox: blocked: hookbox's answer is not a JSON object: ${text.slice(0, 200)}` }
}

export const Hookbox = async () => ({
  "tool.execute.before": async (input: unknown, output: { args: Record<string, unknown> }) => {
    const answer = await ask("tool.execute.before", input, output)
    if (typeof answer.block === "string") throw new Error(answer.block)
    if (answer.args) {
      // OpenCode runs the tool with this very object: change it in place.
      for (const key of Object.keys(output.args)) delete output.args[key]
      Object.assign(output.args, answer.args)
    }
  },
  "tool.execute.after": async (input: unknown, output: Record<string, unknown>) => {
    const answer = await ask("tool.execute.after", input, output)
    if (typeof answer.block === "string") throw new Error(answer.block)
    if (answer.result) Object.assign(output, answer.result)
  },
})
