/**
 * A protocol agent for the conformance test, built on roost-agent.ts: it records every
 * delivery it handled. The TypeScript twin of tests/agents/proto_recorder.py.
 *
 * Each handled delivery is a line of `handled.jsonl` in the job's directory ({seq, text,
 * mode, kind, pid, run}, plus what it did), written when the handler is done. `run` tells
 * its runs apart (in a jail each run's pid is its namespace's own, the same every time).
 *
 * Replies it acts on:
 *   exit                      report done, close, exit 0 (by letting the event loop end)
 *   hold                      wait (30 s at most) until the file `release` is in the job directory
 *   raise                     the handler throws (it counts as handled)
 *   op NAME TIMEOUT JSON      call(NAME, JSON) with TIMEOUT seconds; records the result,
 *                             the refusal's code, or "timeout"
 *
 * Files it watches in the job directory: `close-now` (its text is a timeout in seconds: it
 * writes `closing`, calls close(), writes `closed`, lets a handler still running finish,
 * and exits 0 without another report). When roost refuses it for good it writes
 * `refused.json` ({code}) and exits 4.
 *
 * Arguments: `--crash-on TEXT` dies (SIGKILL, once: a marker file remembers) when handed
 * that text; `--messages` takes peer items too (onMessage); `--no-close` reports twice and
 * ends without close() and without handlers, so only the client's beforeExit close gets
 * the last report out.
 *
 * Environment (a test's launch env): PROTO_RELAY_SOCKET speaks through that socket instead
 * of ROOST_SOCKET; PROTO_TOKEN uses that token instead of the job's. PROTO_LOG: a file the
 * client's log goes to.
 */

import { randomUUID } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";

import { RoostAgent, RoostError, jobFromEnv, type Logger, type Reply } from "../src/roost-agent.js";

const RUN = randomUUID();

const args = process.argv.slice(2);
const crashOn = args.includes("--crash-on") ? args[args.indexOf("--crash-on") + 1] : null;
const takesMessages = args.includes("--messages");
const job = jobFromEnv();
if (!job || !job.jobDir) {
  process.stdout.write("recorder: not inside a roost job\n");
  process.exit(2);
}
const directory = job.jobDir;

function record(entry: object, name = "handled.jsonl"): void {
  fs.appendFileSync(path.join(directory, name), JSON.stringify(entry) + "\n", { mode: 0o600 });
}

const exists = (name: string): boolean => fs.existsSync(path.join(directory, name));
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

const logFile = process.env.PROTO_LOG;
const log: Logger | undefined = logFile
  ? (level, message) => fs.appendFileSync(logFile, `${new Date().toISOString()} ${level} ${message}\n`)
  : undefined;

function make(onReply?: (reply: Reply) => Promise<void>, onMessage?: (item: Reply) => Promise<void>): RoostAgent {
  return new RoostAgent({
    jobId: job!.jobId,
    token: process.env.PROTO_TOKEN || job!.token,
    socketPath: process.env.PROTO_RELAY_SOCKET || job!.socketPath,
    jobDir: directory,
    name: "proto-recorder",
    version: "1",
    onReply,
    onMessage,
    log,
  });
}

if (args.includes("--no-close")) {
  const agent = make();
  agent.report({ state: "working", summary: "starting" });
  agent.report({ state: "done", summary: "finished without close()" });
} else {
  main();
}

function main(): void {
  let finished: (() => void) | null = null;
  const exitAsked = new Promise<void>((resolve) => (finished = resolve));
  let handling = 0;
  let count = 0;

  async function call(text: string): Promise<object> {
    const [, name, timeout, ...rest] = text.split(" ");
    try {
      return { result: await agent.call(name, JSON.parse(rest.join(" ")), { timeoutMs: Number(timeout) * 1000 }) };
    } catch (error) {
      if (error instanceof RoostError) return { code: error.code };
      throw error;
    }
  }

  async function onReply(reply: Reply): Promise<void> {
    handling += 1;
    try {
      const text = reply.text;
      agent.report({ state: "working", summary: "handling: " + text });
      const entry: Record<string, unknown> = { seq: reply.seq, text, mode: reply.mode, kind: reply.kind, pid: process.pid, run: RUN };
      if (crashOn !== null && text === crashOn && !exists(`crashed-${reply.seq}`)) {
        fs.writeFileSync(path.join(directory, `crashed-${reply.seq}`), "");   // once: started again, it handles it
        process.kill(process.pid, "SIGKILL");
        await sleep(60_000);
      }
      const command = text.split(" ")[0];
      if (command === "hold") {
        const deadline = Date.now() + 30_000;
        while (!exists("release") && Date.now() < deadline) await sleep(10);
      } else if (command === "raise") {
        record(entry);
        throw new Error("a handler that fails");
      } else if (command === "op") {
        entry.call = await call(text);
      }
      record(entry);
      count += 1;
      if (text === "exit") finished!();
      else agent.report({ state: "blocked", summary: `handled ${count}: ${text}` });
    } finally {
      handling -= 1;
    }
  }

  async function onMessage(item: Reply): Promise<void> {
    record({ seq: item.seq, text: item.text, kind: item.kind, from: item.from, relation: item.relation, pid: process.pid, run: RUN });
    agent.report({ state: "blocked", summary: `item ${item.seq}: ${item.text}` });
  }

  const agent = make(onReply, takesMessages ? onMessage : undefined);
  agent.report({ state: "blocked", summary: "ready" });

  const watcher = setInterval(async () => {
    if (agent.refused) {
      clearInterval(watcher);
      record({ code: agent.refused.code }, "refused.json");
      process.exit(4);
    }
    if (exists("close-now")) {
      clearInterval(watcher);
      const timeout = Number(fs.readFileSync(path.join(directory, "close-now"), "utf8") || "1");
      fs.writeFileSync(path.join(directory, "closing"), "");
      await agent.close(timeout * 1000);
      fs.writeFileSync(path.join(directory, "closed"), "");
      // A handler still running may finish before the process ends (30 s at most).
      const deadline = Date.now() + 30_000;
      while (handling > 0 && Date.now() < deadline) await sleep(10);
      process.exit(0);
    }
  }, 20);

  void exitAsked.then(async () => {
    clearInterval(watcher);
    agent.report({ state: "done", summary: "bye" });
    await agent.close();
    // Nothing is left to hold the event loop: the process ends here, by itself.
  });
}
