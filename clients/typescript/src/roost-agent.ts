/**
 * roost-agent: speak the roost agent protocol from node. One file, node's standard
 * library only (node 18 and newer).
 *
 *     import { RoostAgent } from "./roost-agent.js";
 *     const agent = RoostAgent.fromEnv({ name: "my-agent", version: "1.0", onReply: async (r) => work(r.text) });
 *     agent?.report({ state: "working", summary: "reading the code" });
 *
 * What it does (the protocol's "Clients" section), as `roost_agent.py` does:
 *
 * - `RoostAgent.fromEnv` finds the job in the environment (ROOST_JOB_ID, ROOST_JOB_TOKEN,
 *   ROOST_SOCKET, ROOST_JOB_DIR; else PI_JOB_ID, PI_JOB_TOKEN, PI_DAEMON_SOCK, PI_JOB_DIR)
 *   and answers null outside a job.
 * - The first `report()` connects. Every connection says `hello`, then sends the latest
 *   report; while the daemon is away it reconnects with backoff (50 ms doubling to 2 s).
 *   `report()` never blocks: only the latest snapshot is sent (a report made while one is
 *   on its way replaces the one waiting). That part is the `Reporter`, usable alone.
 * - Replies go to `onReply(reply)` once each, in order, one at a time (the next is handed
 *   over when the promise the handler returned settles). Then the reply's seq is written
 *   to `$ROOST_JOB_DIR/agent.json` (`lastSeq`; peer items in `itemSeqs`; other keys are
 *   kept), then acked; an agent started again skips (and only acks) what it had finished.
 *   A handler that throws counts as handled (a crash of the process does not). Peer items
 *   (`kind` set) go to `onMessage`, each acked by itself (`exact: true`).
 * - `unauthorized` or `not_found` on a report or an ack: the agent stops speaking for the
 *   job (`refused`, `onRefused`); no retry loop.
 * - Before each connection it checks that the socket is the user's own roost's: its
 *   directory owned by this user and writable by no one else, the socket owned by this
 *   user (node has no SO_PEERCRED; in a directory no one else may write, the socket's
 *   owner is whoever bound it). Else nothing is sent: `untrusted`, as a refusal.
 * - `close()` sends the latest report and waits briefly for it to be taken; a reply whose
 *   handler is still running is acked only if it finishes within that wait (otherwise it
 *   comes again on the next start, which only acks it if the handler did finish after all).
 *   A script whose event loop runs dry without close() gets one then (`beforeExit`).
 * - `call(op, args)` sends any other op on the job's connection; `peers`, `send`, `watch`
 *   and the board's helpers (`tasks`, `claimTask`, ...) use it.
 *
 * Defaults of `report()`: `status` follows the state (working: busy; blocked: waiting;
 * done and failed: idle). `waitingFor`, for a blocked agent only: "question" when a
 * question or choices are given, else "first-prompt" until the first reply was handed
 * over in this job, then null. Pass `status` or `waitingFor` to say otherwise.
 *
 * It writes nothing to stdout or stderr (an agent's screen is its own): give `log` to see
 * what it does.
 */

import { AsyncLocalStorage } from "node:async_hooks";
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";

export const PROTOCOL = 1;
export const VERSION = "1.0";

// ---------------------------------------------------------------------------- the wire's shapes

export type State = "working" | "blocked" | "done" | "failed";
export type Status = "busy" | "waiting" | "idle";
export type WaitingFor = "dialog" | "question" | "first-prompt" | "limit" | null;
export type ReplyMode = "steer" | "followUp";
export type ItemKind = "message" | "report" | "notice" | "digest";
export type JsonObject = { [key: string]: unknown };

/** How full the session's context window is (the spec's `ContextInfo`). */
export interface ContextInfo {
  tokens: number | null;
  window: number;
  percent: number | null;
}

/** What an agent reports about itself, a full snapshot every time (the spec's `WorkerReport`). */
export interface WorkerReport {
  state: State;
  status: Status;
  waitingFor: WaitingFor;
  summary: string | null;
  question: string | null;
  choices: string[];
  tool: string | null;
  error: string | null;
  name: string | null;
  model: string | null;
  thinking?: string | null;
  context?: ContextInfo | null;
  usage?: JsonObject | null;
  attachSignal?: boolean;
  attachRepaint?: boolean;
  agentItems?: boolean;
  remoteAt?: number;
  prLinks?: string[];
  /** With `waitingFor: "limit"`: when the usage limit resets (ms since the epoch). */
  resetsAt?: number | null;
}

/** What `report()` takes: `state`, and whatever else is known (the rest is null). */
export interface ReportInput {
  state: State;
  status?: Status | null;
  waitingFor?: WaitingFor;
  summary?: string | null;
  question?: string | null;
  choices?: string[] | null;
  tool?: string | null;
  error?: string | null;
  name?: string | null;
  model?: string | null;
  thinking?: string | null;
  context?: ContextInfo | null;
  usage?: JsonObject | null;
  attachSignal?: boolean;
  attachRepaint?: boolean;
  remoteAt?: number;
  prLinks?: string[];
  resetsAt?: number | null;
}

/** The daemon's answer to `hello` (the spec's `HelloResult`). */
export interface HelloResult {
  protocol: number;
  daemon: { name: string; version: string };
  capabilities: string[];
}

/** The `deliver` event, as the daemon sends it. */
export interface DeliverEvent {
  event: "deliver";
  id?: string;
  seq: number;
  text?: string;
  mode?: ReplyMode;
  kind?: ItemKind;
  from?: string;
  relation?: string;
  [key: string]: unknown;
}

/** One delivery: a user's reply (for `onReply`) or a peer item (`kind` set, for `onMessage`). */
export interface Reply {
  seq: number;
  text: string;
  /** "steer" (join the work under way) or "followUp" (after it; also when absent). */
  mode: ReplyMode;
  steer: boolean;
  kind: ItemKind | null;
  /** The event's `from` (a peer item's sender). */
  from: string | null;
  relation: string | null;
  /** The event itself. */
  data: DeliverEvent;
}

/** A refusal from the daemon (`code` is the spec's: unauthorized, not_found, full, busy,
 * unsupported, bad_request, ...), or the client's own `disconnected` (the connection was
 * lost while a request waited, or the agent is closed) and `timeout`. */
export class RoostError extends Error {
  readonly code: string;
  readonly text: string;
  constructor(code: string, text: string) {
    super(`${code}: ${text}`);
    this.name = "RoostError";
    this.code = code;
    this.text = text;
  }
}

/** Why the socket at `socketPath` is not this user's own roost's, or null when it is
 * (or when nothing is there yet: connecting says so). */
export function notOurs(socketPath: string): string | null {
  const uid = process.getuid ? process.getuid() : -1;
  const directory = path.dirname(path.resolve(socketPath));
  let info: fs.Stats;
  try {
    info = fs.statSync(directory);
  } catch {
    return null;
  }
  if (info.uid !== uid) return `${directory} belongs to uid ${info.uid}, not to you (uid ${uid})`;
  if (info.mode & 0o022) return `${directory} may be written by others (mode ${(info.mode & 0o777).toString(8)})`;
  try {
    info = fs.lstatSync(socketPath);
  } catch {
    return null;
  }
  if (info.uid !== uid) return `${socketPath} belongs to uid ${info.uid}, not to you (uid ${uid})`;
  return null;
}

export type LogLevel = "debug" | "info" | "warn" | "error";
export type Logger = (level: LogLevel, message: string) => void;

// ---------------------------------------------------------------------------- limits and names

const STATES: readonly State[] = ["working", "blocked", "done", "failed"];
const STATUS_OF_STATE: Record<State, Status> = { working: "busy", blocked: "waiting", done: "idle", failed: "idle" };
// The daemon cuts these too (the spec's `report`); cutting here as well keeps every line
// far below the socket's 4 MiB, so an oversized report can never make a reconnect loop.
const TEXT_LIMITS = { summary: 500, question: 2000, tool: 100, error: 1000, name: 200 } as const;
const MAX_CHOICES = 20;
const MAX_CHOICE = 200;
const BACKOFF_FIRST_MS = 50;
const BACKOFF_MAX_MS = 2000;
const BUSY_RETRY_MS = 200;
const CONNECT_TIMEOUT_MS = 5000;
const MAX_LINE = 64 * 1024 * 1024;
const STATE_FILE = "agent.json";
const STATE_VERSION = 1;
const KEPT_ITEM_SEQS = 100;
/** Codes that mean "this job is not yours (any more)": stop, never retry. */
const FATAL_CODES = ["unauthorized", "not_found"];
const ENVIRONMENT = {
  jobId: ["ROOST_JOB_ID", "PI_JOB_ID"],
  token: ["ROOST_JOB_TOKEN", "PI_JOB_TOKEN"],
  socketPath: ["ROOST_SOCKET", "PI_DAEMON_SOCK"],
  jobDir: ["ROOST_JOB_DIR", "PI_JOB_DIR"],
} as const;

function cut(value: unknown, limit: number): string | null {
  if (value === null || value === undefined) return null;
  const text = typeof value === "string" ? value : String(value);
  return text.length > limit ? text.slice(0, limit) : text;
}

function isSeq(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 1;
}

function silent(): void {}

// ---------------------------------------------------------------------------- the Reporter

/** The job the environment names, or null outside a job. */
export interface JobIdentity {
  jobId: string;
  token: string;
  socketPath: string;
  jobDir: string | null;
}

export function jobFromEnv(env: NodeJS.ProcessEnv = process.env): JobIdentity | null {
  const pick = (names: readonly string[]): string | null => {
    for (const name of names) {
      const value = env[name];
      if (value) return value;
    }
    return null;
  };
  const jobId = pick(ENVIRONMENT.jobId);
  const token = pick(ENVIRONMENT.token);
  const socketPath = pick(ENVIRONMENT.socketPath);
  if (!jobId || !token || !socketPath) return null;
  return { jobId, token, socketPath, jobDir: pick(ENVIRONMENT.jobDir) };
}

export interface ReporterOptions {
  jobId: string;
  token: string;
  socketPath: string;
  /** Who speaks, for `hello`. */
  agent: { name: string; version?: string };
  /** The agent's capabilities, for `hello` (see the spec's table). */
  capabilities: string[];
  /** Every `deliver` event for this job, as it comes (on every connection). */
  onDeliver?: (event: DeliverEvent) => void;
  /** The daemon's hello answer, on each connection (null: a daemon from before hello). */
  onHello?: (result: HelloResult | null) => void;
  /** The daemon refused the job for good (unauthorized, not_found): the reporter stopped. */
  onRefused?: (error: RoostError) => void;
  /** The connection holds the process open (until close). Default false. */
  keepAlive?: boolean;
  log?: Logger;
}

interface Request {
  op: string;
  args: JsonObject;
  /** The client's own ops (report, ack): called with the answer, never rejected. */
  onAnswer?: (error: RoostError | null, result: JsonObject) => void;
  resolve?: (result: JsonObject) => void;
  reject?: (error: RoostError) => void;
  done: boolean;
  timer?: NodeJS.Timeout;
}

interface Connection {
  sock: net.Socket;
  dead: boolean;
  /** A report of ours was accepted on it: acks and calls may go. */
  registered: boolean;
  /** A report is on its way, unanswered. */
  reportWaiting: boolean;
  /** The latest report generation written on it. */
  sentGeneration: number;
  /** After `busy`: the report is sent again when this fires. */
  retryTimer: NodeJS.Timeout | null;
  inFlight: Map<number, Request>;
  pending: Buffer[];
  pendingBytes: number;
}

/**
 * One job's connection to roost: hello on every connection, the latest report (coalesced),
 * reconnects with backoff, acks and other ops once a report was accepted on it, `deliver`
 * events out. It keeps no replies: that is RoostAgent's.
 */
export class Reporter {
  readonly jobId: string;
  /** The daemon's latest hello answer. */
  daemon: HelloResult | null = null;
  /** The refusal that made it stop speaking for the job. */
  refused: RoostError | null = null;

  private readonly opts: ReporterOptions;
  private readonly log: Logger;
  private report: WorkerReport | null = null;
  private generation = 0;
  private answeredGeneration = 0;
  private outbox: Request[] = [];
  private conn: Connection | null = null;
  private nextId = 0;
  private started = false;
  private stopped = false;
  private delay = 0;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private keepAlive: boolean;
  private waiters = new Set<() => void>();

  constructor(opts: ReporterOptions) {
    this.opts = opts;
    this.jobId = opts.jobId;
    this.log = opts.log ?? silent;
    this.keepAlive = opts.keepAlive ?? false;
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  /** A report of ours was accepted on the connection there is now. */
  get connected(): boolean {
    return this.conn !== null && !this.conn.dead && this.conn.registered;
  }

  /** Send this full snapshot (replacing one not yet sent). The first call connects. */
  send(report: WorkerReport): void {
    if (this.stopped) {
      this.log("debug", "report after close or refusal ignored");
      return;
    }
    this.report = report;
    this.generation += 1;
    if (!this.started) {
      this.started = true;
      this.connect();
    } else {
      this.pump();
    }
  }

  /** Ack a delivery (sent once a report was accepted on the connection; one lost with
   * its connection needs no resend: the daemon delivers it again, and it is acked again). */
  ack(seq: number, exact: boolean): void {
    if (this.stopped) return;
    const args: JsonObject = { id: this.jobId, token: this.opts.token, seq };
    if (exact) args.exact = true;
    this.outbox.push({ op: "ack", args, done: false, onAnswer: (error) => this.onAck(error) });
    this.pump();
  }

  /** Send one op on the job's connection; its result. Rejects with a RoostError (the
   * daemon's code, `disconnected` when the connection was lost meanwhile, `timeout`). */
  call(op: string, args: JsonObject = {}, timeoutMs = 10_000): Promise<JsonObject> {
    let copy: JsonObject;
    try {
      copy = JSON.parse(JSON.stringify(args ?? {})) as JsonObject;
    } catch (error) {
      return Promise.reject(error);
    }
    if (this.refused) return Promise.reject(new RoostError(this.refused.code, this.refused.text));
    if (this.stopped) return Promise.reject(new RoostError("disconnected", "the agent is closed"));
    if (!this.started) {
      return Promise.reject(new RoostError("disconnected", "not connected: report first, it makes the connection"));
    }
    return new Promise<JsonObject>((resolve, reject) => {
      const request: Request = { op, args: copy, resolve, reject, done: false };
      request.timer = setTimeout(() => {
        const index = this.outbox.indexOf(request);
        if (index >= 0) this.outbox.splice(index, 1);
        // One already written is answered into nothing: its answer finds no one waiting.
        this.settle(request, new RoostError("timeout", `no answer to ${op} within ${timeoutMs} ms`));
      }, timeoutMs);
      if (!this.keepAlive) request.timer.unref();
      this.outbox.push(request);
      this.pump();
    });
  }

  /** The latest report was answered and no ack waits to be sent or answered. */
  flushed(): boolean {
    if (this.answeredGeneration < this.generation) return false;
    const waiting = [...this.outbox, ...(this.conn ? this.conn.inFlight.values() : [])];
    return !waiting.some((request) => request.op === "ack");
  }

  /** Resolves when `until()` is true, something stopped the reporter, or after `ms`. */
  waitFor(until: () => boolean, ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      let done = false;
      const finish = (value: boolean): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        this.waiters.delete(waiter);
        this.setHold(-1);
        resolve(value);
      };
      const waiter = (): void => {
        if (until()) finish(true);
        else if (this.stopped) finish(false);
      };
      const timer = setTimeout(() => finish(until()), Math.max(0, ms));
      this.waiters.add(waiter);
      this.setHold(1);
      waiter();
    });
  }

  /** Let anything waiting in waitFor look again (after a change outside the reporter). */
  changed(): void {
    for (const waiter of [...this.waiters]) waiter();
  }

  /** Send the latest report and wait (`timeoutMs` at most) for it and the acks to be
   * taken, then disconnect. */
  async close(timeoutMs = 2000): Promise<void> {
    if (this.started && !this.stopped) await this.waitFor(() => this.flushed(), timeoutMs);
    this.stop();
  }

  /** Disconnect now; nothing more is sent. */
  stop(refusal?: RoostError): void {
    if (refusal && !this.refused) this.refused = refusal;
    if (this.stopped) return;
    this.stopped = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.reconnectTimer = null;
    const failure = refusal ?? new RoostError("disconnected", "the agent is closed");
    for (const request of this.outbox.splice(0)) this.settle(request, failure);
    const conn = this.conn;
    if (conn) {
      this.drop(conn);
      conn.sock.destroy();
    }
    this.changed();
    if (refusal) {
      try {
        this.opts.onRefused?.(refusal);
      } catch (error) {
        this.log("error", `onRefused failed: ${String(error)}`);
      }
    }
  }

  // -------------------------------------------------------------------------- connection

  private holds = 0;

  /** close() and waitFor() hold the process open while they wait. */
  private setHold(change: number): void {
    this.holds += change;
    this.applyRef();
  }

  private applyRef(): void {
    const conn = this.conn;
    if (!conn || conn.dead) return;
    if (this.keepAlive || this.holds > 0) conn.sock.ref();
    else conn.sock.unref();
  }

  private connect(): void {
    this.reconnectTimer = null;
    if (this.stopped) return;
    const why = notOurs(this.opts.socketPath);
    if (why !== null) {
      // Someone else's socket: never worth another try, nothing is sent to it.
      const refusal = new RoostError("untrusted", `refusing to talk to ${this.opts.socketPath}: ${why}`);
      this.log("error", refusal.text);
      this.stop(refusal);
      return;
    }
    const sock = net.createConnection({ path: this.opts.socketPath });
    const conn: Connection = {
      sock, dead: false, registered: false, reportWaiting: false, sentGeneration: 0,
      retryTimer: null, inFlight: new Map(), pending: [], pendingBytes: 0,
    };
    this.conn = conn;
    this.applyRef();
    const connectTimer = setTimeout(() => sock.destroy(new Error("connect timed out")), CONNECT_TIMEOUT_MS);
    connectTimer.unref();
    sock.on("connect", () => {
      clearTimeout(connectTimer);
      this.log("debug", `connected to ${this.opts.socketPath}`);
      const hello: JsonObject = {
        protocol: PROTOCOL,
        agent: this.opts.agent.version !== undefined
          ? { name: this.opts.agent.name, version: String(this.opts.agent.version) }
          : { name: this.opts.agent.name },
        capabilities: [...this.opts.capabilities],
      };
      this.write(conn, [{ op: "hello", args: hello, done: false, onAnswer: (error, result) => this.onHello(error, result) }]);
      this.pump();
    });
    sock.on("data", (chunk: Buffer) => this.onData(conn, chunk));
    sock.on("error", (error) => {
      clearTimeout(connectTimer);
      this.log("debug", `connection: ${error.message}`);
    });
    sock.on("close", () => {
      clearTimeout(connectTimer);
      const registered = conn.registered;
      this.drop(conn);
      if (this.stopped) return;
      this.delay = registered ? 0 : Math.min(Math.max(this.delay * 2, BACKOFF_FIRST_MS), BACKOFF_MAX_MS);
      this.reconnectTimer = setTimeout(() => this.connect(), this.delay);
      if (!this.keepAlive && this.holds === 0) this.reconnectTimer.unref();
    });
  }

  /** The connection is over: what waited for an answer on it learns so. */
  private drop(conn: Connection): void {
    if (conn.dead) return;
    conn.dead = true;
    if (conn.retryTimer) clearTimeout(conn.retryTimer);
    if (this.conn === conn) this.conn = null;
    const lost = [...conn.inFlight.values()];
    conn.inFlight.clear();
    for (const request of lost) {
      // Acks need no resend: the daemon sends every pending reply again on the next
      // connection, and a finished one is acked again then. A report is sent again.
      if (!request.onAnswer) this.settle(request, new RoostError("disconnected", "the connection to roost was lost"));
    }
    this.changed();
  }

  /** Write what may go now: once a report was accepted, acks and calls, ahead of a newer
   * report (a report made after a handler returned must not overtake that handler's ack). */
  private pump(): void {
    const conn = this.conn;
    if (!conn || conn.dead || this.stopped || conn.sock.connecting) return;
    const batch: Request[] = [];
    if (conn.registered) batch.push(...this.outbox.splice(0));
    if (!conn.reportWaiting && conn.sentGeneration < this.generation && !conn.retryTimer && this.report) {
      const generation = this.generation;
      conn.reportWaiting = true;
      conn.sentGeneration = generation;
      batch.push({
        op: "report",
        args: { id: this.jobId, token: this.opts.token, report: this.report },
        done: false,
        onAnswer: (error) => this.onReport(conn, generation, error),
      });
    }
    if (batch.length) this.write(conn, batch);
  }

  private write(conn: Connection, requests: Request[]): void {
    const lines: string[] = [];
    for (const request of requests) {
      if (request.done) continue;   // timed out while it waited
      this.nextId += 1;
      conn.inFlight.set(this.nextId, request);
      lines.push(JSON.stringify({ id: this.nextId, op: request.op, args: request.args }));
    }
    if (!lines.length) return;
    conn.sock.write(lines.join("\n") + "\n", "utf8");
  }

  private onData(conn: Connection, chunk: Buffer): void {
    let start = 0;
    let newline = chunk.indexOf(10);
    if (newline < 0) {
      conn.pending.push(chunk);
      conn.pendingBytes += chunk.length;
      if (conn.pendingBytes > MAX_LINE) {
        this.log("warn", `a line from the daemon over ${MAX_LINE} bytes: dropping the connection`);
        conn.sock.destroy();
      }
      return;
    }
    while (newline >= 0) {
      const piece = chunk.subarray(start, newline);
      const line = conn.pending.length ? Buffer.concat([...conn.pending, piece]) : piece;
      conn.pending = [];
      conn.pendingBytes = 0;
      if (line.length) this.onLine(conn, line.toString("utf8"));
      if (conn.dead && this.stopped) return;
      start = newline + 1;
      newline = chunk.indexOf(10, start);
    }
    if (start < chunk.length) {
      const rest = chunk.subarray(start);
      conn.pending.push(rest);
      conn.pendingBytes += rest.length;
    }
  }

  private onLine(conn: Connection, line: string): void {
    if (!line.trim()) return;
    let message: unknown;
    try {
      message = JSON.parse(line);
    } catch {
      this.log("warn", `not JSON from the daemon: ${line.slice(0, 200)}`);
      return;
    }
    if (!message || typeof message !== "object" || Array.isArray(message)) return;
    const object = message as JsonObject;
    if ("event" in object) {
      if (object.event === "deliver") {
        const event = object as DeliverEvent;
        if (event.id !== undefined && event.id !== this.jobId) return;
        try {
          this.opts.onDeliver?.(event);
        } catch (error) {
          this.log("error", `onDeliver failed: ${String(error)}`);
        }
      }
      return;
    }
    const id = object.id;
    const request = typeof id === "number" ? conn.inFlight.get(id) : undefined;
    if (!request) return;
    conn.inFlight.delete(id as number);
    if (object.ok === true) {
      const result = object.result;
      const value = result && typeof result === "object" && !Array.isArray(result) ? (result as JsonObject) : {};
      this.settle(request, null, value);
    } else {
      this.settle(request, new RoostError(String(object.code ?? "internal"), String(object.error ?? "refused")));
    }
    this.changed();
  }

  private settle(request: Request, error: RoostError | null, result: JsonObject = {}): void {
    if (request.done) return;
    request.done = true;
    if (request.timer) clearTimeout(request.timer);
    if (request.onAnswer) {
      request.onAnswer(error, result);
    } else if (error) {
      request.reject?.(error);
    } else {
      request.resolve?.(result);
    }
  }

  // -------------------------------------------------------------------------- answers to our own ops

  private onHello(error: RoostError | null, result: JsonObject): void {
    if (error) {
      // A daemon from before M31 does not know hello: go on with version 1.
      this.log("debug", `hello refused (${error.message}): going on with protocol 1`);
      this.daemon = null;
    } else {
      this.daemon = result as unknown as HelloResult;
    }
    try {
      this.opts.onHello?.(this.daemon);
    } catch (failure) {
      this.log("error", `onHello failed: ${String(failure)}`);
    }
  }

  private onReport(conn: Connection, generation: number, error: RoostError | null): void {
    if (error && FATAL_CODES.includes(error.code)) {
      this.log("warn", `roost refused the report (${error.message}): no longer speaking for job ${this.jobId}`);
      this.stop(error);
      return;
    }
    conn.reportWaiting = false;
    if (!error) {
      conn.registered = true;
      this.delay = 0;
    } else if (error.code === "busy") {
      conn.sentGeneration = Math.min(conn.sentGeneration, generation - 1);
      conn.retryTimer = setTimeout(() => {
        conn.retryTimer = null;
        this.pump();
      }, BUSY_RETRY_MS);
      if (!this.keepAlive) conn.retryTimer.unref();
    } else {
      this.log("warn", `roost did not take the report: ${error.message}`);
    }
    if (!error || error.code !== "busy") this.answeredGeneration = Math.max(this.answeredGeneration, generation);
    this.pump();
    this.changed();
  }

  private onAck(error: RoostError | null): void {
    if (!error) return;
    if (FATAL_CODES.includes(error.code)) {
      this.log("warn", `roost refused an ack (${error.message}): no longer speaking for job ${this.jobId}`);
      this.stop(error);
    } else {
      this.log("warn", `roost refused an ack: ${error.message}`);
    }
  }
}

// ---------------------------------------------------------------------------- RoostAgent

export interface AgentOptions {
  name: string;
  version?: string;
  /** A user's reply; the next one is handed over when the returned promise settles. */
  onReply?: (reply: Reply) => unknown;
  /** A peer item (a message, a report, a notice, a digest); saying so in hello and reports. */
  onMessage?: (item: Reply) => unknown;
  /** Capabilities beyond those the handlers imply (report, replies, agent-items, peers). */
  capabilities?: string[];
  /** The daemon refused the job for good: the agent stopped speaking for it. */
  onRefused?: (error: RoostError) => void;
  /** The connection holds the process open until close(). Default: when a handler is given. */
  keepAlive?: boolean;
  log?: Logger;
}

export interface AgentJob extends AgentOptions {
  jobId: string;
  token: string;
  socketPath: string;
  jobDir?: string | null;
}

interface Progress {
  lastSeq: number;
  itemSeqs: number[];
}

/** An agent speaking for one roost job. Build it with `RoostAgent.fromEnv`. */
export class RoostAgent {
  readonly jobId: string;
  readonly name: string;
  readonly reporter: Reporter;

  private readonly onReply?: (reply: Reply) => unknown;
  private readonly onMessage?: (item: Reply) => unknown;
  private readonly jobDir: string | null;
  private readonly log: Logger;
  private readonly inHandler = new AsyncLocalStorage<Reply>();
  private finishedSeq: number;
  private finishedItems: number[];
  private queuedSeq: number;
  private queuedItems: Set<number>;
  private handedAny: boolean;
  private deliveries: Reply[] = [];
  private running: Reply | null = null;
  private draining = false;
  private closed = false;
  private closing = false;
  private exitHook: (() => void) | null = null;

  /** The agent for the job this process runs in, or null outside a job. */
  static fromEnv(options: AgentOptions & { env?: NodeJS.ProcessEnv }): RoostAgent | null {
    const job = jobFromEnv(options.env ?? process.env);
    if (!job) return null;
    return new RoostAgent({ ...options, ...job });
  }

  constructor(options: AgentJob) {
    this.jobId = options.jobId;
    this.name = options.name;
    this.onReply = options.onReply;
    this.onMessage = options.onMessage;
    this.jobDir = options.jobDir ?? null;
    this.log = options.log ?? silent;
    const progress = this.loadProgress();
    this.finishedSeq = progress.lastSeq;
    this.finishedItems = progress.itemSeqs;
    this.queuedSeq = this.finishedSeq;
    this.queuedItems = new Set(this.finishedItems);
    this.handedAny = this.finishedSeq > 0;
    const capabilities = ["report"];
    if (this.onReply) capabilities.push("replies");
    if (this.onMessage) capabilities.push("agent-items", "peers");
    for (const capability of options.capabilities ?? []) {
      if (typeof capability === "string" && !capabilities.includes(capability)) capabilities.push(capability);
    }
    this.reporter = new Reporter({
      jobId: options.jobId,
      token: options.token,
      socketPath: options.socketPath,
      agent: options.version !== undefined ? { name: options.name, version: options.version } : { name: options.name },
      capabilities,
      onDeliver: (event) => this.onDeliver(event),
      onRefused: options.onRefused,
      keepAlive: options.keepAlive ?? Boolean(this.onReply || this.onMessage),
      log: this.log,
    });
  }

  /** The daemon's hello answer, once it gave one. */
  get daemon(): HelloResult | null {
    return this.reporter.daemon;
  }

  /** The refusal that made the agent stop speaking for the job. */
  get refused(): RoostError | null {
    return this.reporter.refused;
  }

  /** Send a full snapshot of the agent's state (what is not given is null). Never blocks;
   * the first call connects. */
  report(input: ReportInput): void {
    if (!STATES.includes(input.state)) {
      throw new TypeError(`state must be one of ${STATES.join(", ")}, not ${JSON.stringify(input.state)}`);
    }
    const choices = (input.choices ?? []).slice(0, MAX_CHOICES).map((choice) => cut(choice, MAX_CHOICE) as string);
    let waitingFor = input.waitingFor ?? null;
    if (input.waitingFor === undefined && input.state === "blocked") {
      if (input.question || choices.length) waitingFor = "question";
      else if (!this.handedAny) waitingFor = "first-prompt";
    }
    const snapshot: WorkerReport = {
      state: input.state,
      status: input.status ?? STATUS_OF_STATE[input.state],
      waitingFor,
      summary: cut(input.summary, TEXT_LIMITS.summary),
      question: cut(input.question, TEXT_LIMITS.question),
      choices,
      tool: cut(input.tool, TEXT_LIMITS.tool),
      error: cut(input.error, TEXT_LIMITS.error),
      name: cut(input.name, TEXT_LIMITS.name),
      model: input.model ?? null,
      thinking: input.thinking ?? null,
      context: input.context ?? null,
      usage: input.usage ?? null,
    };
    for (const key of ["attachSignal", "attachRepaint", "remoteAt", "prLinks", "resetsAt"] as const) {
      if (input[key] !== undefined) (snapshot as unknown as JsonObject)[key] = input[key];
    }
    if (this.onMessage) snapshot.agentItems = true;
    // A copy through JSON: what cannot be sent fails here, in the caller's call, and an
    // object the caller changes later does not change the report.
    const copy = JSON.parse(JSON.stringify(snapshot)) as WorkerReport;
    if (this.closed || this.reporter.isStopped) {
      this.log("debug", "report after close or refusal ignored");
      return;
    }
    this.reporter.send(copy);
    this.hookExit();
  }

  /** Send one op on the job's connection; its result (needs the connection, made by the
   * first report). Rejects with a RoostError: the daemon's code, `disconnected`, `timeout`. */
  call(op: string, args: JsonObject = {}, options: { timeoutMs?: number } = {}): Promise<JsonObject> {
    if (this.closed && !this.reporter.isStopped) return Promise.reject(new RoostError("disconnected", "the agent is closed"));
    return this.reporter.call(op, args, options.timeoutMs ?? 10_000);
  }

  /** The sessions this one may message (`peers`). */
  async peers(): Promise<JsonObject[]> {
    return ((await this.call("peers")).peers as JsonObject[] | undefined) ?? [];
  }

  /** A message to another session (an id or a name `peers` lists): the SendResult. */
  send(to: string, message: string): Promise<JsonObject> {
    return this.call("send", { to, message });
  }

  /** Tell me once (a `notice` to onMessage) when that session is next idle, or has ended. */
  watch(id: string, when: "idle" | "ended"): Promise<JsonObject> {
    return this.call("watch", { id, when });
  }

  /** The board's tasks this job may see (oldest first). */
  async tasks(project?: string): Promise<JsonObject[]> {
    const args: JsonObject = { action: "list" };
    if (project !== undefined) args.project = project;
    return ((await this.call("task", args)).tasks as JsonObject[] | undefined) ?? [];
  }

  /** Take a task; returns it. Refusals: blocked, conflict, bad_request, not_found. */
  async claimTask(id: number): Promise<JsonObject> {
    return (await this.call("task", { action: "claim", id })).task as JsonObject;
  }

  async taskDone(id: number, result?: string): Promise<JsonObject> {
    const args: JsonObject = { action: "done", id };
    if (result !== undefined) args.result = result;
    return (await this.call("task", args)).task as JsonObject;
  }

  async releaseTask(id: number): Promise<JsonObject> {
    return (await this.call("task", { action: "release", id })).task as JsonObject;
  }

  /** Put a new open task on the board (for this job's project); returns it. */
  async addTask(title: string, detail?: string, after?: number[]): Promise<JsonObject> {
    const args: JsonObject = { action: "add", title };
    if (detail !== undefined) args.detail = detail;
    if (after && after.length) args.after = [...after];
    return (await this.call("task", args)).task as JsonObject;
  }

  /** Send the latest report, wait up to `timeoutMs` for it (and for the ack of a reply
   * whose handler finishes meanwhile) to be taken, then disconnect. Called from a handler,
   * it does not wait for that handler. */
  async close(timeoutMs = 2000): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.closing = true;   // nothing more is handed to the handlers
    this.deliveries = [];
    this.unhookExit();
    const fromHandler = this.inHandler.getStore() !== undefined;
    if (!this.reporter.isStopped) {
      await this.reporter.waitFor(() => (fromHandler || this.running === null) && this.reporter.flushed(), timeoutMs);
    }
    this.reporter.stop();
  }

  // -------------------------------------------------------------------------- deliveries

  private onDeliver(event: DeliverEvent): void {
    if (!isSeq(event.seq)) return;
    if (this.closing) return;   // not handed over: it comes again on the next start
    const delivery: Reply = {
      seq: event.seq,
      text: typeof event.text === "string" ? event.text : "",
      mode: event.mode === "steer" ? "steer" : "followUp",
      steer: event.mode === "steer",
      kind: event.kind || null,
      from: typeof event.from === "string" ? event.from : null,
      relation: typeof event.relation === "string" ? event.relation : null,
      data: event,
    };
    if (delivery.kind !== null) {
      if (!this.onMessage) return;
      if (this.finishedItems.includes(delivery.seq)) {
        this.reporter.ack(delivery.seq, true);   // finished before: ack only
        return;
      }
      if (this.queuedItems.has(delivery.seq)) return;
      this.queuedItems.add(delivery.seq);
    } else {
      if (!this.onReply) return;
      if (delivery.seq <= this.finishedSeq) {
        this.reporter.ack(delivery.seq, false);   // finished before: ack only
        return;
      }
      if (delivery.seq <= this.queuedSeq) return;   // a resend of one waiting or running
      this.queuedSeq = delivery.seq;
    }
    this.deliveries.push(delivery);
    void this.drain();
  }

  private async drain(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    try {
      while (this.deliveries.length && !this.closing) {
        const delivery = this.deliveries.shift() as Reply;
        this.running = delivery;
        this.handedAny = true;
        const handler = delivery.kind !== null ? this.onMessage : this.onReply;
        try {
          await this.inHandler.run(delivery, async () => {
            await handler?.(delivery);
          });
        } catch (error) {
          this.log("error", `the handler of delivery ${delivery.seq} failed; it counts as handled: ${
            error instanceof Error ? error.stack ?? error.message : String(error)}`);
        }
        this.finish(delivery);
      }
    } finally {
      this.draining = false;
    }
  }

  /** Keep the delivery's seq in agent.json, then ack it (the spec: "before its ack").
   * After close() it is still kept but not acked once the connection is gone: the daemon
   * sends it again on the next start, and that start only acks it. */
  private finish(delivery: Reply): void {
    let finishedSeq = this.finishedSeq;
    let items = this.finishedItems;
    if (delivery.kind !== null) items = [...items, delivery.seq].slice(-KEPT_ITEM_SEQS);
    else finishedSeq = Math.max(finishedSeq, delivery.seq);
    this.saveProgress(finishedSeq, items);
    this.finishedSeq = finishedSeq;
    this.finishedItems = items;
    this.running = null;
    if (!this.reporter.isStopped) this.reporter.ack(delivery.seq, delivery.kind !== null);
    this.reporter.changed();
  }

  // -------------------------------------------------------------------------- at exit

  /** A script whose event loop runs dry without close() still gets its last report out. */
  private hookExit(): void {
    if (this.exitHook) return;
    this.exitHook = () => {
      this.unhookExit();
      void this.close(1000);
    };
    process.once("beforeExit", this.exitHook);
  }

  private unhookExit(): void {
    if (this.exitHook) process.removeListener("beforeExit", this.exitHook);
    this.exitHook = null;
  }

  // -------------------------------------------------------------------------- agent.json

  private progressPath(): string | null {
    return this.jobDir ? path.join(this.jobDir, STATE_FILE) : null;
  }

  private readProgressFile(): JsonObject {
    const file = this.progressPath();
    if (!file) return {};
    let text: string;
    try {
      text = fs.readFileSync(file, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") this.log("warn", `cannot read ${file}: ${String(error)}`);
      return {};
    }
    try {
      const data = JSON.parse(text) as unknown;
      if (!data || typeof data !== "object" || Array.isArray(data)) throw new Error("not a JSON object");
      return data as JsonObject;
    } catch (error) {
      this.log("warn", `${file} is damaged (${String(error)}): set aside, starting from nothing`);
      try {
        fs.renameSync(file, `${file}.corrupt-${Date.now()}`);
      } catch {
        // gone meanwhile
      }
      return {};
    }
  }

  private loadProgress(): Progress {
    const data = this.readProgressFile();
    const lastSeq = isSeq(data.lastSeq) ? data.lastSeq : 0;
    const items = Array.isArray(data.itemSeqs) ? data.itemSeqs.filter(isSeq) : [];
    return { lastSeq, itemSeqs: items.slice(-KEPT_ITEM_SEQS) };
  }

  private saveProgress(lastSeq: number, itemSeqs: number[]): void {
    const file = this.progressPath();
    if (!file) return;
    const data = this.readProgressFile();   // keeps keys others wrote
    data.version = isSeq(data.version) && data.version > STATE_VERSION ? data.version : STATE_VERSION;
    data.lastSeq = lastSeq;
    data.itemSeqs = itemSeqs;
    try {
      writeAtomically(file, JSON.stringify(data) + "\n");
    } catch (error) {
      // Acked all the same: the ack is what keeps the daemon from sending it again.
      this.log("error", `cannot write ${file}: ${String(error)}`);
    }
  }
}

/** Temp file in the same directory (0600), fsync, rename over, fsync the directory. */
function writeAtomically(file: string, text: string): void {
  const directory = path.dirname(file);
  const temp = path.join(directory, `.agent.json.${process.pid}.${Date.now()}.${Math.random().toString(36).slice(2)}`);
  const fd = fs.openSync(temp, "wx", 0o600);
  try {
    fs.writeSync(fd, text);
    fs.fsyncSync(fd);
  } catch (error) {
    fs.closeSync(fd);
    fs.rmSync(temp, { force: true });
    throw error;
  }
  fs.closeSync(fd);
  try {
    fs.renameSync(temp, file);
  } catch (error) {
    fs.rmSync(temp, { force: true });
    throw error;
  }
  const dirFd = fs.openSync(directory, "r");
  try {
    fs.fsyncSync(dirFd);
  } finally {
    fs.closeSync(dirFd);
  }
}
