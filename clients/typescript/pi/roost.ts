/**
 * roost for pi: a pi extension that speaks the roost agent protocol for the job pi runs
 * in, on the TypeScript client (../src/roost-agent.ts). pi loads it as it is:
 *
 *     pi -e /path/to/clients/typescript/pi/roost.ts
 *
 * Run as a roost job whose profile says `"protocol": true`, pi's row is then what pi says
 * of itself, from its own events, not read off its screen:
 *
 * - working from `agent_start` to `agent_end` (the summary: the prompt, then the tool
 *   running, then what the model wrote); blocked after it, waiting for the next reply
 *   (`first-prompt` until pi had one, `question` after, as every agent read off its
 *   screen says), with the last answer as the summary, and as the row's `question` when
 *   it ends with a question mark.
 * - a dialog (an extension's `ctx.ui.select`, `confirm`, `input`, `editor` or `custom`,
 *   such as a permission gate): blocked, `waitingFor: "dialog"`, its title as the
 *   question and its options as the choices, until it is answered, in pi's screen or by
 *   a reply: a reply names a choice (its text or its number; for a confirm yes or no) or,
 *   for an input, is the text. `editor` and `custom` dialogs are answered on pi's screen.
 * - the model and thinking level pi runs, and how full its context is.
 *
 * Replies come to pi as the user's messages: `mode: "steer"` as pi's steer (after the
 * tools under way, before the next model call), `followUp` (or none) as a follow-up (once
 * pi is done); to an idle pi either starts a turn. `/model PROVIDER/ID` and `/thinking
 * LEVEL` switch pi's model and thinking level. A reply is acked once pi has it.
 *
 * Other sessions reach pi too (its hello says `agent-items` and `peers`): a peer's
 * message, a child's report, a watch's notice, a note from the board come as pi's custom
 * messages (`customType: "roost"`), shown in pi's screen as such and given to the model as
 * input, each in the daemon's envelope ("[roost: a message from the session ..., not from
 * the user ...]"), as a follow-up (to an idle pi it starts a turn). Never as a dialog's
 * answer: only the user's replies answer one. And pi's model gets roost's tools
 * (./tools.ts, the same as `roost mcp`'s): roost_peers, roost_send, roost_watch,
 * roost_tasks, roost_claim, roost_done.
 *
 * Outside a roost job it does nothing. It writes nothing on pi's screen: `roost attach`
 * shows pi as it is. Give ROOST_PI_LOG (a file) to see what the client does.
 */

import * as fs from "node:fs";

import { VERSION, type ExtensionAPI, type ExtensionContext, type ExtensionUIContext } from "@mariozechner/pi-coding-agent";

import { RoostAgent, type ReportInput, type Reply } from "../src/roost-agent.ts";
import { registerTools } from "./tools.ts";

const NAME = "pi";
const SUMMARY_LIMIT = 500;
/** How long a reply handed to an idle pi waits for pi to start on it before the next is
 * handed over (pi takes its messages one at a time only once it runs). */
const START_WAIT_MS = 10_000;

type Dialog = {
  kind: "select" | "confirm" | "input" | "editor" | "custom";
  question: string | null;
  choices: string[];
  /** Takes a reply as the dialog's answer: true when it did. */
  answer?: (text: string) => boolean;
};

type Work = {
  state: "working" | "blocked" | "done";
  summary: string | null;
  question: string | null;
  tool: string | null;
  error: string | null;
  limit?: boolean;          // the error is the provider's rate or usage limit
  resetsAt?: number | null;
};

/** When a limit's message says it resets ("try again in 20s", "in 454ms", "in 2m 5s"),
 * as ms since the epoch from `now`; null when it does not say (never guessed). */
const resetFrom = (message: string, now: number): number | null => {
  const found = /try again in ((?:\d+(?:\.\d+)?\s*(?:ms|s|m|h)\s*)+)/i.exec(message);
  if (!found) return null;
  const unit: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  let total = 0;
  for (const part of found[1].matchAll(/(\d+(?:\.\d+)?)\s*(ms|s|m|h)/gi)) {
    total += Number(part[1]) * unit[part[2].toLowerCase()];
  }
  return Math.round(now + total);
};

/** One per pi process: pi makes a new instance of the extension for each session it
 * switches to (/new, /resume, /fork, /reload), and they all speak for the same job. */
type Shared = {
  agent: RoostAgent | null;
  pi: ExtensionAPI | null;
  ctx: ExtensionContext | null;
  work: Work;
  dialogs: Dialog[];
  /** pi has had a prompt in this job (its first reply, or its argv, or a resumed session). */
  prompted: boolean;
  started: Array<() => void>;
  bound: Array<() => void>;
  /** The row's summary for the turn a peer item starts (pi's before_agent_start does not
   * come for one). */
  nextSummary: string | null;
};

const KEY = Symbol.for("roost.pi-extension");
const WRAPPED = Symbol.for("roost.pi-extension.ui");

function shared(): Shared {
  const holder = globalThis as unknown as { [KEY]?: Shared };
  holder[KEY] ??= {
    agent: null, pi: null, ctx: null, dialogs: [], prompted: false, started: [], bound: [], nextSummary: null,
    work: { state: "blocked", summary: "ready", question: null, tool: null, error: null },
  };
  return holder[KEY];
}

function firstLine(text: string | null | undefined, limit = SUMMARY_LIMIT): string | null {
  if (!text) return null;
  const line = text.split("\n").map((part) => part.trim()).find((part) => part.length > 0);
  return line ? line.slice(0, limit) : null;
}

function textOf(message: unknown): string {
  const content = (message as { content?: unknown })?.content;
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter((part) => part && (part as { type?: string }).type === "text")
    .map((part) => String((part as { text?: unknown }).text ?? ""))
    .join("\n");
}

function describeTool(name: string, args: unknown): string {
  const input = (args ?? {}) as Record<string, unknown>;
  const detail = input.command ?? input.path ?? input.pattern ?? input.query ?? input.to ?? input.id;
  return typeof detail === "string" && detail ? `${name}: ${detail}` : name;
}

export default function roost(pi: ExtensionAPI): void {
  const s = shared();
  s.agent ??= RoostAgent.fromEnv({
    name: NAME,
    version: VERSION,
    capabilities: ["steer", "context", "model-switch"],
    onReply: (reply) => onReply(reply),
    onMessage: (item) => onMessage(item),
    keepAlive: false,   // pi's own life decides when the process ends
    log: logger(),
  });
  if (!s.agent) return;   // not inside a roost job
  const agent = s.agent;
  // Each instance (each session pi switches to) registers them with its own pi.
  registerTools(pi, agent, logger());

  const report = (): void => {
    const ctx = s.ctx;
    let model: string | null = null;
    let context: ReportInput["context"] = null;
    let thinking: string | null = null;
    try {
      if (ctx?.model) model = `${ctx.model.provider}/${ctx.model.id}`;
      const usage = ctx?.getContextUsage();
      if (usage) context = { tokens: usage.tokens, window: usage.contextWindow, percent: usage.percent };
      thinking = s.pi ? String(s.pi.getThinkingLevel()) : null;
    } catch {
      // a session being replaced: its context is stale until the next session_start
    }
    const dialog = s.dialogs[s.dialogs.length - 1];
    if (dialog) {
      agent.report({
        state: "blocked", waitingFor: "dialog", question: dialog.question, choices: dialog.choices,
        summary: firstLine(dialog.question) ?? `a ${dialog.kind} dialog is open in pi`,
        model, thinking, context,
      });
      return;
    }
    const work = s.work;
    if (work.state === "blocked" && work.limit && work.error !== null) {
      agent.report({ state: "blocked", status: "waiting", waitingFor: "limit", resetsAt: work.resetsAt ?? null,
                     summary: work.summary, error: work.error, model, thinking, context });
      return;
    }
    agent.report({
      state: work.state,
      summary: work.summary,
      question: work.question,
      tool: work.tool,
      error: work.error,
      // After an answer pi waits for the user's text, asked or not: `question`, as the screen
      // read agents say (a screen cannot tell an answer that asks); the row's `question`
      // says whether it asked.
      waitingFor: work.state !== "blocked" ? null : work.question || s.prompted ? "question" : "first-prompt",
      model, thinking, context,
    });
  };

  const setWork = (change: Partial<Work>): void => {
    s.work = { ...s.work, ...change };
    report();
  };

  pi.on("session_start", async (event, ctx) => {
    s.pi = pi;
    s.ctx = ctx;
    wrapDialogs(ctx.ui, s, report);
    if (event.reason !== "startup" && event.reason !== "reload") s.prompted = true;
    else if (hasUserMessage(ctx)) s.prompted = true;
    if (ctx.isIdle()) setWork({ state: "blocked", question: null, tool: null, error: null });
    else report();
    for (const wake of s.bound.splice(0)) wake();
  });

  pi.on("session_shutdown", async (event) => {
    s.pi = null;
    s.ctx = null;
    if (event.reason === "quit") {
      setWork({ state: "done", summary: "pi exited", question: null, tool: null });
      await agent.close(1000);
    }
  });

  pi.on("before_agent_start", async (event) => {
    s.prompted = true;
    s.nextSummary = null;
    setWork({ state: "working", summary: firstLine(event.prompt) ?? "working", question: null, tool: null, error: null });
  });

  pi.on("agent_start", async () => {
    s.prompted = true;
    const summary = s.nextSummary ?? s.work.summary;
    s.nextSummary = null;
    if (s.work.state !== "working") setWork({ state: "working", summary, question: null, tool: null, error: null });
    for (const wake of s.started.splice(0)) wake();
  });

  pi.on("tool_execution_start", async (event) => {
    setWork({ tool: event.toolName.slice(0, 100), summary: firstLine(describeTool(event.toolName, event.args)) });
  });

  pi.on("tool_execution_end", async () => {
    setWork({ tool: null });
  });

  pi.on("message_end", async (event) => {
    if (event.message.role !== "assistant") return;
    const text = firstLine(textOf(event.message));
    if (text && s.work.state === "working") setWork({ summary: text });
  });

  pi.on("agent_end", async (event) => {
    const messages = event.messages ?? [];
    const last = [...messages].reverse().find((message) => message.role === "assistant") as
      { stopReason?: string; errorMessage?: string } | undefined;
    const text = textOf(last).trim();
    let summary = firstLine(text) ?? "waiting";
    let error: string | null = null;
    if (last?.stopReason === "error") {
      error = (last.errorMessage ?? "the model call failed").slice(0, 1000);
      summary = firstLine(`error: ${error}`) as string;
    } else if (last?.stopReason === "aborted") {
      summary = "aborted";
    }
    // An answer that ends by asking something: the row shows it as the question.
    const question = text.endsWith("?") ? text.split(/\n\s*\n/).pop()!.trim().slice(0, 2000) : null;
    // pi gave up on the provider's rate or usage limit (its retries spent): the row says
    // `limit`, with the reset when the provider's message names one ("try again in 20s").
    const limited = error !== null && /\b429\b|rate limit|usage limit/i.test(error);
    setWork({ state: "blocked", summary, question, tool: null, error, limit: limited,
              resetsAt: limited ? resetFrom(error as string, Date.now()) : null });
  });

  pi.on("model_select", async () => report());
  pi.on("thinking_level_select", async () => report());

  /** Hand a reply to pi: as the answer to the dialog it shows, as a switch, or as the
   * user's message. Returns once pi has it. */
  async function onReply(reply: Reply): Promise<void> {
    const text = reply.text;
    const dialog = s.dialogs[s.dialogs.length - 1];
    if (dialog?.answer) {
      if (!dialog.answer(text)) {
        agent.report({
          state: "blocked", waitingFor: "dialog", question: dialog.question, choices: dialog.choices,
          summary: firstLine(`"${text}" is not one of the choices: ${dialog.choices.join(", ")}`),
        });
      }
      return;
    }
    const current = await boundPi(s);
    if (await switched(current, text)) return;
    s.prompted = true;
    const idle = s.ctx ? s.ctx.isIdle() : true;
    const started = idle ? new Promise<void>((resolve) => s.started.push(resolve)) : null;
    current.sendUserMessage(text, { deliverAs: reply.steer ? "steer" : "followUp" });
    if (started) await Promise.race([started, delay(START_WAIT_MS)]);
  }

  /** Hand a peer item (the daemon's envelope in its text) to pi: a custom message of
   * roost's, which pi shows as such and gives its model as input; a follow-up (a steer
   * when the daemon says so); to an idle pi it starts a turn. Returns once pi has it. */
  async function onMessage(item: Reply): Promise<void> {
    const current = await boundPi(s);
    const idle = s.ctx ? s.ctx.isIdle() : true;
    const started = idle ? new Promise<void>((resolve) => s.started.push(resolve)) : null;
    if (idle) s.nextSummary = firstLine(itemSummary(item));
    current.sendMessage(
      { customType: "roost", content: item.text, display: true,
        details: { kind: item.kind, from: item.from, relation: item.relation, seq: item.seq } },
      { triggerTurn: true, deliverAs: item.steer ? "steer" : "followUp" });
    if (started) await Promise.race([started, delay(START_WAIT_MS)]);
  }

  async function switched(current: ExtensionAPI, text: string): Promise<boolean> {
    const match = /^\/(model|thinking)\s+(\S+)\s*$/.exec(text.trim());
    if (!match || !s.ctx) return false;
    if (match[1] === "thinking") {
      current.setThinkingLevel(match[2] as Parameters<ExtensionAPI["setThinkingLevel"]>[0]);
      report();
      return true;
    }
    const [provider, ...rest] = match[2].split("/");
    const model = rest.length ? s.ctx.modelRegistry.find(provider, rest.join("/")) : undefined;
    if (!model || !(await current.setModel(model))) {
      setWork({ question: null, summary: `no model ${match[2]} (with a key) in pi` });
      return true;
    }
    report();
    return true;
  }
}

/** What the row says while pi works on a peer item. */
function itemSummary(item: Reply): string {
  if (!item.from) return "a note from roost";
  if (item.kind === "notice") return `a notice about ${item.from}`;
  return `a ${item.kind ?? "message"} from ${item.from}`;
}

function hasUserMessage(ctx: ExtensionContext): boolean {
  try {
    return ctx.sessionManager.getBranch().some((entry) => {
      const message = (entry as { type?: string; message?: { role?: string } }).message;
      return (entry as { type?: string }).type === "message" && message?.role === "user";
    });
  } catch {
    return false;
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** The pi of the session there is now (between two sessions, the next one's). */
function boundPi(s: Shared): Promise<ExtensionAPI> {
  if (s.pi) return Promise.resolve(s.pi);
  return new Promise((resolve) => s.bound.push(() => resolve(s.pi as ExtensionAPI)));
}

/** pi's dialogs for extensions all go through the one `ctx.ui` object of the session:
 * each of its dialog methods, wrapped, says the dialog is open while it is, and lets a
 * reply answer it (closing pi's own dialog through its abort signal). */
function wrapDialogs(ui: ExtensionUIContext, s: Shared, report: () => void): void {
  const marked = ui as ExtensionUIContext & { [WRAPPED]?: boolean };
  if (marked[WRAPPED]) return;
  marked[WRAPPED] = true;

  async function open<T>(dialog: Dialog, show: () => Promise<T>): Promise<T> {
    s.dialogs.push(dialog);
    report();
    try {
      return await show();
    } finally {
      const index = s.dialogs.indexOf(dialog);
      if (index >= 0) s.dialogs.splice(index, 1);
      report();
    }
  }

  /** Show pi's dialog with a signal of ours; a reply's answer closes it and wins. */
  function answerable<T>(dialog: Dialog, parse: (text: string) => { ok: boolean; value?: T },
                         show: (signal: AbortSignal) => Promise<T>, outer?: AbortSignal): Promise<T> {
    const controller = new AbortController();
    outer?.addEventListener("abort", () => controller.abort(), { once: true });
    let answered: (value: T) => void = () => {};
    const byReply = new Promise<T>((resolve) => (answered = resolve));
    dialog.answer = (text) => {
      const parsed = parse(text);
      if (!parsed.ok) return false;
      answered(parsed.value as T);
      controller.abort();
      return true;
    };
    return open(dialog, () => Promise.race([show(controller.signal), byReply]));
  }

  const select = ui.select.bind(ui);
  const confirm = ui.confirm.bind(ui);
  const input = ui.input.bind(ui);
  const editor = ui.editor.bind(ui);
  const custom = ui.custom.bind(ui);

  ui.select = (title, options, opts) =>
    answerable({ kind: "select", question: title, choices: [...options] }, (text) => {
      const wanted = text.trim();
      const number = /^\d+$/.test(wanted) ? Number(wanted) : 0;
      const found = number >= 1 && number <= options.length
        ? options[number - 1]
        : options.find((option) => option === wanted) ??
          options.find((option) => option.toLowerCase() === wanted.toLowerCase());
      return found === undefined ? { ok: false } : { ok: true, value: found };
    }, (signal) => select(title, options, { ...opts, signal }), opts?.signal);

  ui.confirm = (title, message, opts) =>
    answerable({ kind: "confirm", question: message ? `${title}\n${message}` : title, choices: ["Yes", "No"] }, (text) => {
      const wanted = text.trim().toLowerCase();
      if (["yes", "y", "1"].includes(wanted)) return { ok: true, value: true };
      if (["no", "n", "2"].includes(wanted)) return { ok: true, value: false };
      return { ok: false };
    }, (signal) => confirm(title, message, { ...opts, signal }), opts?.signal);

  ui.input = (title, placeholder, opts) =>
    answerable<string | undefined>({ kind: "input", question: title, choices: [] },
      (text) => ({ ok: true, value: text }), (signal) => input(title, placeholder, { ...opts, signal }), opts?.signal);

  ui.editor = (title, prefill) => open({ kind: "editor", question: title, choices: [] }, () => editor(title, prefill));

  ui.custom = ((factory: Parameters<ExtensionUIContext["custom"]>[0], options?: Parameters<ExtensionUIContext["custom"]>[1]) =>
    open({ kind: "custom", question: null, choices: [] }, () => custom(factory, options))) as ExtensionUIContext["custom"];
}

function logger(): ((level: string, message: string) => void) | undefined {
  const file = process.env.ROOST_PI_LOG;
  if (!file) return undefined;
  return (level, message) => {
    try {
      fs.appendFileSync(file, `${new Date().toISOString()} ${level} ${message}\n`);
    } catch {
      // nowhere to say it
    }
  };
}
