// roost web: the page. Everything it shows comes over one event stream (/api/stream) and
// is put in the page as text (textContent), never as HTML. Answers and actions are POSTs
// with the CSRF token from <meta name="csrf-token">. No polling: the stream pushes.
"use strict";

const CSRF = document.querySelector('meta[name="csrf-token"]').content;
const READ_ONLY = document.querySelector('meta[name="roost-read-only"]').content === "true";
const LATER_MINUTES = 60;
const COUNTED = new Set(["rows", "removed", "feed", "tasks"]);
const INBOX_FIRST = 30;     // drawn at first; the rest on "Show all" (500 forms cost a phone its first paint)
const GROUP_TITLES = {needs: "Needs you", working: "Working", finished: "Finished", failed: "Failed"};
const KEY_NAMES = {Escape: "Esc", Tab: "Tab", BTab: "Shift-Tab", Up: "Up", Down: "Down", Left: "Left",
                   Right: "Right", Enter: "Enter", "C-c": "Ctrl-C"};

const state = {
  page: null, version: null, rows: new Map(), groups: [], feed: [], tasks: [], board: null, concierge: null,
  hosts: null, screen: null, screenJob: null, pushKey: null, drawn: false, inboxAll: false,
};
const $ = (id) => document.getElementById(id);

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (key === "text") node.textContent = value;
    else if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (value !== undefined && value !== null && value !== false) node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

function newRequestId() {
  const bytes = new Uint8Array(12);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

async function post(path, body) {
  const response = await fetch("/api/" + path, {
    method: "POST", credentials: "same-origin",
    headers: {"Content-Type": "application/json", "X-CSRF-Token": CSRF},
    body: JSON.stringify(body),
  });
  let answer = {};
  try { answer = await response.json(); } catch (error) { answer = {ok: false, error: response.statusText}; }
  if (!answer.ok) throw new Error(answer.error || ("HTTP " + response.status));
  return answer.result;
}

function say(text) { $("conn").textContent = text; }

function ago(ms) {
  if (!ms) return "";
  const seconds = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (seconds < 60) return seconds + "s";
  if (seconds < 3600) return Math.floor(seconds / 60) + "m";
  if (seconds < 86400) return Math.floor(seconds / 3600) + "h";
  return Math.floor(seconds / 86400) + "d";
}

// -- the stream ---------------------------------------------------------------------------

let stream = null;

function connect() {
  // Since the version drawn: a stream that starts there sends no second snapshot.
  stream = new EventSource("/api/stream?since=" + encodeURIComponent(state.version));
  stream.onopen = () => say("live");
  stream.onmessage = (event) => take(JSON.parse(event.data));
  stream.onerror = () => {
    if (stream.readyState === EventSource.CLOSED) {
      say("not paired: open the URL `roost web` printed");
      document.body.classList.add("cut-off");
    } else {
      say("reconnecting…");
    }
  };
}

function take(message) {
  // The changes the server counts (a screen's frames are the page's own): a page that
  // missed one never matches the server's count again, and is sent a snapshot.
  if (COUNTED.has(message.kind) && state.version !== null) state.version += 1;
  switch (message.kind) {
    case "hello":
      state.page = message.page;
      state.pushKey = message.push;
      offerPush();
      tellView();
      break;
    case "snapshot":
      state.version = message.version;
      state.rows = new Map(message.rows.map((row) => [row.id, row]));
      state.groups = message.groups;
      state.feed = message.feed;
      state.tasks = message.tasks || [];
      state.board = message.board;
      state.concierge = message.concierge;
      state.hosts = message.hosts;
      schedule(true);
      break;
    case "rows":
      for (const row of message.rows) {
        if (row.role === "concierge") state.concierge = row; else state.rows.set(row.id, row);
      }
      if (message.groups) state.groups = message.groups;      // a new row, or one that moved
      schedule(!!message.groups, message.rows.map((row) => row.id));
      break;
    case "removed":
      state.rows.delete(message.id);
      if (message.groups) state.groups = message.groups;
      schedule(true);
      break;
    case "feed":
      state.feed.push(message.entry);
      if (state.feed.length > 50) state.feed.shift();
      schedule(false, [], true);
      break;
    case "tasks":
      state.tasks = message.tasks || [];
      state.board = message.board;
      schedule(true);
      break;
    case "screen":
      if (message.id === state.screenJob) drawScreen(message);
      break;
  }
}

// -- drawing the lists --------------------------------------------------------------------

let pending = null;

function schedule(whole, ids, feed) {
  if (!pending) {
    pending = {whole: false, ids: new Set(), feed: false};
    requestAnimationFrame(() => { const work = pending; pending = null; draw(work); });
  }
  pending.whole = pending.whole || whole;
  for (const id of ids || []) pending.ids.add(id);
  pending.feed = pending.feed || !!feed;
}

const rowNodes = new Map();     // job id -> its fleet row's <li>
const inboxNodes = new Map();   // job id -> [its inbox item, the row it was drawn from]

function draw(work) {
  if (!state.drawn || work.whole || work.ids.size) drawInbox();
  if (!state.drawn || work.whole) drawFleet();
  else for (const id of work.ids) updateRow(id);
  if (!state.drawn || work.whole) drawBoard();
  if (!state.drawn || work.whole || work.ids.size) drawSpend();
  if (!state.drawn || work.whole || work.feed) drawFeed();
  drawHosts();
  if (state.screenJob) drawScreenTitle();
  if (!state.drawn) performance.mark("roost-drawn");     // the first full paint (bench/web.py)
  state.drawn = true;
  document.body.classList.add("drawn");
}

function needsIds() {
  const needs = state.groups.find(([group]) => group === "needs");
  return needs ? needs[1] : [];
}

function laterKey(row) { return "roost-later:" + row.id + ":" + (row.stateSince || 0); }

// Not now, as this browser keeps it: read from localStorage once, not per row per change.
const laterUntil = new Map();
for (const key of Array.from({length: localStorage.length}, (_, index) => localStorage.key(index))) {
  if (!key || !key.startsWith("roost-later:")) continue;
  const until = Number(localStorage.getItem(key) || 0);
  if (until > Date.now()) laterUntil.set(key, until); else localStorage.removeItem(key);
}

function putOff(row) {
  const until = laterUntil.get(laterKey(row)) || 0;
  return until > Date.now() ? until : 0;
}

function setPutOff(row, until) {
  laterUntil.set(laterKey(row), until);
  localStorage.setItem(laterKey(row), String(until));
}

let laterTimer = null;

function drawInbox() {
  const list = $("inbox-list");
  const shown = [];
  let hidden = 0, soonest = 0;
  for (const [id, reason] of needsIds()) {
    const row = state.rows.get(id);
    if (!row) continue;
    const until = putOff(row);
    if (until) { hidden += 1; soonest = soonest ? Math.min(soonest, until) : until; continue; }
    shown.push([row, reason]);
  }
  const keep = new Set();
  const more = state.inboxAll ? 0 : Math.max(0, shown.length - INBOX_FIRST);
  shown.slice(0, shown.length - more).forEach(([row, reason], index) => {
    keep.add(row.id);
    let [node, drawnFrom] = inboxNodes.get(row.id) || [];
    if (!node || drawnFrom !== row) {
      const fresh = inboxItem(row, reason);
      if (node) {
        // The person's draft in the old item goes over to the new one.
        const old = node.querySelector(".reply-form input"), now = fresh.querySelector(".reply-form input");
        if (old && now && old.value) { now.value = old.value; if (document.activeElement === old) setTimeout(() => now.focus()); }
        node.replaceWith(fresh);
      }
      node = fresh;
      inboxNodes.set(row.id, [node, row]);
    }
    if (list.children[index] !== node) list.insertBefore(node, list.children[index] || null);
  });
  for (const [id, [node]] of inboxNodes) {
    if (!keep.has(id)) { node.remove(); inboxNodes.delete(id); }
  }
  $("inbox-more").hidden = more === 0;
  $("inbox-more").textContent = "Show all " + shown.length;
  $("inbox-count").textContent = shown.length ? "(" + shown.length + ")" : "";
  $("inbox-empty").hidden = shown.length > 0;
  $("later-line").hidden = hidden === 0;
  $("later-line").textContent = hidden ? hidden + " put off (Not now) until " + new Date(soonest).toLocaleTimeString() : "";
  clearTimeout(laterTimer);
  if (soonest) laterTimer = setTimeout(() => schedule(true), Math.max(0, soonest - Date.now()) + 50);
}

function choiceKeys(row, choice) {
  // What roost types for a choice: a dialog's number ("1. Yes" -> "1"), else the choice.
  const numbered = /^\s*(\d{1,2})[.)]\s/.exec(choice);
  return row.waitingFor === "dialog" && numbered ? numbered[1] : choice;
}

function actionButton(label, handler, props) {
  const button = el("button", Object.assign({type: "button", text: label, disabled: READ_ONLY}, props || {}));
  button.addEventListener("click", async () => {
    if (READ_ONLY) return;
    button.disabled = true;
    try { await handler(button); } catch (error) { button.disabled = false; flash(button, error.message); }
  });
  return button;
}

function flash(near, text) {
  const item = near.closest("li") || document.body;
  let said = item.querySelector(":scope > .said");
  if (!said) { said = el("p", {class: "said", role: "status"}); item.append(said); }
  said.textContent = text;
}

function describeReply(result) {
  if (result.duplicate) return "already sent";
  if (result.delivered) return "sent";
  if (result.saved) return "queued: it reaches the agent once it waits for input";
  return result.error || "not submitted";
}

// An item without a question shows the last lines of its screen, read when it comes
// into view (one peek per item drawn, not one per waiting job).
const lastLines = new IntersectionObserver((entries) => {
  for (const entry of entries) {
    if (!entry.isIntersecting) continue;
    lastLines.unobserve(entry.target);
    post("peek", {id: entry.target.dataset.id})
      .then((result) => { if (result.text) entry.target.textContent = result.text; })
      .catch(() => {});
  }
});

function inboxItem(row, reason) {
  const name = row.name || row.id;
  const text = row.question || row.summary || row.error || "it waits for you";
  const head = el("div", {class: "need-head"},
    el("a", {href: "#job=" + encodeURIComponent(row.id), class: "name", text: name}),
    el("span", {class: "muted", text: " " + (row.waitingFor || row.state) + " · " + ago(row.stateSince)}),
    reason ? el("span", {class: "reason", text: " · " + reason}) : null);
  const question = el("p", {class: "question", text});
  const item = el("li", {class: "need", "data-id": row.id}, head, question);
  if (!row.question) {
    question.classList.add("screen-tail");
    question.dataset.id = row.id;
    lastLines.observe(question);
  }
  if (row.choices && row.choices.length) {
    const choices = el("div", {class: "choices", role: "group", "aria-label": "Choices for " + name});
    for (const choice of row.choices) {
      choices.append(actionButton(choice, async () => {
        const result = await post("reply", {id: row.id, text: choiceKeys(row, choice), requestId: newRequestId()});
        flash(choices, choice + ": " + describeReply(result));
        for (const other of choices.querySelectorAll("button")) other.disabled = true;
      }));
    }
    item.append(choices);
  }
  if (row.suggested && row.suggested.text) {
    item.append(el("div", {class: "suggested"},
      actionButton("Send the suggestion: " + row.suggested.text, async (button) => {
        const result = await post("reply", {id: row.id, text: row.suggested.text, requestId: newRequestId()});
        flash(button, describeReply(result));
      }),
      row.suggested.why ? el("span", {class: "muted", text: " " + row.suggested.why}) : null));
  }
  const input = el("input", {type: "text", "aria-label": "Reply to " + name, placeholder: "Reply…",
                             disabled: READ_ONLY, autocomplete: "off"});
  const requestId = {value: newRequestId()};
  const form = el("form", {class: "reply-form"}, input,
                  el("button", {type: "submit", text: "Send", disabled: READ_ONLY}));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (READ_ONLY || !input.value.trim()) return;
    const text = input.value;
    input.disabled = true;
    try {
      const result = await post("reply", {id: row.id, text, requestId: requestId.value});
      requestId.value = newRequestId();
      input.value = "";
      flash(form, describeReply(result));
    } catch (error) { flash(form, error.message); }
    input.disabled = false;
  });
  // Not now beside Send: one row of controls under each question on a phone.
  form.append(actionButton("Not now", async () => {
    const result = await post("later", {id: row.id, minutes: LATER_MINUTES});
    setPutOff(row, result.until || Date.now() + LATER_MINUTES * 60000);
    schedule(true);
  }, {"aria-label": "Not now: remind me in an hour"}));
  item.append(form);
  return item;
}

function rowLine(row) {
  const spend = row.spend && typeof row.spend.usd === "number" ? " · $" + row.spend.usd.toFixed(2) : "";
  return (row.summary || row.question || row.error || "") + spend;
}

// What a row says of itself: `?` for a live row roost cannot read (blocked, status and
// waitingFor null: docs/states.md), which is no question and never in the inbox; a row
// parked at a budget says so.
function stateWord(row) {
  if (row.state === "blocked" && row.waitingFor === "budget") return "budget";
  return row.state === "blocked" && row.status == null && row.waitingFor == null ? "?" : (row.status || row.state);
}

function fleetRow(row) {
  const node = el("li", {class: "row state-" + row.state, "data-id": row.id});
  fillRow(node, row);
  return node;
}

function fillRow(node, row) {
  node.replaceChildren(...[
    el("a", {href: "#job=" + encodeURIComponent(row.id), class: "name", text: row.name || row.id}),
    el("span", {class: "muted", text: " " + stateWord(row) + " " + ago(row.stateSince)}),
    row.pinned ? el("span", {class: "pin", text: " pinned"}) : null,
    row.host ? el("span", {class: "pin", text: " " + row.host}) : null,
    el("div", {class: "line", text: rowLine(row)})].filter(Boolean));
  node.className = "row state-" + row.state;
}

function updateRow(id) {
  const node = rowNodes.get(id);
  const row = state.rows.get(id);
  if (node && row) fillRow(node, row);
}

function drawFleet() {
  const holder = $("groups");
  const sections = [];
  const seen = new Set();
  for (const [group, entries] of state.groups) {
    const title = el("h3", {text: (GROUP_TITLES[group] || group) + " (" + entries.length + ")"});
    if (group === "needs") {
      // Listed in the inbox above, each with its answers: here only how many.
      sections.push(el("section", {class: "group group-needs"}, title,
        el("p", {class: "muted"}, el("a", {href: "#inbox", text: "in the inbox above"}))));
      continue;
    }
    const list = el("ol", {class: "rows"});
    for (const [id] of entries) {
      const row = state.rows.get(id);
      if (!row) continue;
      seen.add(id);
      let node = rowNodes.get(id);
      if (!node) { node = fleetRow(row); rowNodes.set(id, node); } else fillRow(node, row);
      list.append(node);
    }
    sections.push(el("section", {class: "group group-" + group}, title, list));
  }
  for (const id of Array.from(rowNodes.keys())) if (!seen.has(id)) rowNodes.delete(id);
  holder.replaceChildren(...sections);
  const concierge = state.concierge;
  $("concierge-line").hidden = !concierge;
  if (concierge) $("concierge-line").textContent = "concierge (" + concierge.state + "): " + (concierge.summary || concierge.question || "");
}

function drawBoard() {
  const counts = state.board;
  if (counts) {
    const parts = ["open", "claimed", "blocked", "done"].map((key) => (counts[key] || 0) + " " + key);
    if (counts.workspaces) parts.push(counts.workspaces + " in workspaces");
    if (counts.needsYou) parts.push(counts.needsYou + " need you");
    $("board-line").textContent = parts.join(", ");
  }
  const list = $("review-list");
  const items = [];
  for (const task of state.tasks) {
    const workspace = task.workspace || {};
    if (!["review", "conflict", "failed"].includes(workspace.stage)) continue;
    items.push(reviewItem(task, workspace));
  }
  list.replaceChildren(...items);
}

function reviewItem(task, workspace) {
  const summary = workspace.note || "";
  const item = el("li", {class: "review"},
    el("div", {class: "need-head"}, el("strong", {text: "#" + task.id + " " + (task.title || "")}),
       el("span", {class: "muted", text: " " + workspace.stage + (workspace.branch ? " · " + workspace.branch : "")})),
    summary ? el("p", {class: "question", text: summary}) : null);
  const commands = el("pre", {class: "commands", hidden: true});
  const approve = actionButton("Approve", async () => {
    const result = await post("task", {action: "approve", id: task.id, hash: approve.dataset.hash});
    flash(approve, result.note || "approved");
  }, {hidden: true});
  item.append(el("div", {class: "row-actions"},
    actionButton("Show commands", async (button) => {
      const result = await post("task", {action: "approve", id: task.id, dry: true});
      commands.textContent = (result.note || "") + "\nhash " + (result.hash || "");
      commands.hidden = false;
      approve.dataset.hash = result.hash || "";
      approve.hidden = !result.hash;
      approve.setAttribute("aria-label", "Approve the commands shown (hash " + (result.hash || "").slice(0, 12) + ")");
      button.disabled = false;
    }),
    approve,
    actionButton("Merge", async (button) => {
      const result = await post("task", {action: "merge", id: task.id});
      flash(button, result.note || "merged");
    }, {"aria-label": "Merge #" + task.id})), commands);
  return item;
}

function drawSpend() {
  const today = new Date(); today.setHours(0, 0, 0, 0);
  let usd = 0, jobs = 0;
  for (const row of state.rows.values()) {
    const spend = row.spend;
    if (!spend || typeof spend.usd !== "number") continue;
    if ((spend.at || row.startedAt || 0) < today.getTime()) continue;
    usd += spend.usd; jobs += 1;
  }
  $("spend").hidden = jobs === 0;
  $("spend-line").textContent = jobs ? "$" + usd.toFixed(2) + " across " + jobs + " job" + (jobs === 1 ? "" : "s") : "";
}

function drawFeed() {
  const items = state.feed.slice(-50).reverse().map((entry) => el("li", {},
    el("span", {class: "muted", text: (entry.at ? new Date(entry.at).toLocaleTimeString() : "") + " "}),
    el("strong", {text: (entry.name || "roost") + " "}),
    el("span", {text: entry.text || entry.kind || ""})));
  $("feed-list").replaceChildren(...items);
}

function drawHosts() {
  $("hosts-line").hidden = !state.hosts;
  if (state.hosts) $("hosts-line").textContent = "machines: " + state.hosts.join("   ");
}

// -- a job's live screen ------------------------------------------------------------------

function drawScreenTitle() {
  const row = state.rows.get(state.screenJob) || (state.concierge && state.concierge.id === state.screenJob ? state.concierge : null);
  $("screen-title").textContent = row ? (row.name || row.id) : state.screenJob;
  $("screen-state").textContent = row ? (row.waitingFor || stateWord(row)) : "";
}

function drawScreen(frame) {
  const pre = $("screen");
  if (frame.error) $("screen-said").textContent = frame.error;
  if (frame.full) {
    state.screen = {rows: frame.rows, cols: frame.cols, lines: (frame.lines || []).slice(), cursor: frame.cursor};
    pre.replaceChildren(...Array.from({length: frame.rows}, () => el("div", {class: "line"})));
    state.screen.lines.forEach((_, index) => drawLine(index));
  } else if (state.screen && frame.lines) {
    const screen = state.screen;
    if (frame.rows !== screen.rows) {
      screen.rows = frame.rows;
      while (pre.children.length < frame.rows) pre.append(el("div", {class: "line"}));
      while (pre.children.length > frame.rows) pre.lastChild.remove();
    }
    const before = screen.cursor;
    screen.cursor = frame.cursor || screen.cursor;
    for (const [index, text] of Object.entries(frame.lines)) { screen.lines[Number(index)] = text; drawLine(Number(index)); }
    if (before && (!screen.cursor || before[0] !== screen.cursor[0])) drawLine(before[0]);
    if (screen.cursor) drawLine(screen.cursor[0]);
  }
  if (frame.ended) $("screen-state").textContent = "ended";
}

function drawLine(index) {
  const screen = state.screen;
  const node = $("screen").children[index];
  if (!node) return;
  const text = screen.lines[index] || "";
  if (screen.cursor && screen.cursor[0] === index) {
    const x = screen.cursor[1];
    const padded = text.length > x ? text : text + " ".repeat(x - text.length + 1);
    node.replaceChildren(padded.slice(0, x), el("span", {class: "cursor", text: padded[x] || " "}), padded.slice(x + 1));
  } else {
    node.textContent = text || "\u00a0";
  }
}

function openScreen(jobId) {
  state.screenJob = jobId;
  state.screen = null;
  $("screen").replaceChildren();
  $("screen-said").textContent = "";
  $("lists").hidden = true;
  $("screen-view").hidden = false;
  drawScreenTitle();
  tellView();
}

function closeScreen() {
  state.screenJob = null;
  $("screen-view").hidden = true;
  $("lists").hidden = false;
  tellView();
}

function route() {
  const match = /^#job=(.+)$/.exec(location.hash);
  if (match) openScreen(decodeURIComponent(match[1])); else closeScreen();
}

function tellView() {
  if (!state.page) return;
  post("view", {page: state.page, job: state.screenJob, visible: document.visibilityState === "visible"})
    .catch((error) => say(error.message));
}

async function sendKey(button) {
  if (READ_ONLY || !state.screenJob) return;
  try {
    await post("keys", {id: state.screenJob, keys: [button.dataset.key]});
    $("screen-said").textContent = KEY_NAMES[button.dataset.key] + " sent";
  } catch (error) { $("screen-said").textContent = error.message; }
}

async function typeText(event) {
  event.preventDefault();
  const input = $("type-text");
  if (READ_ONLY || !state.screenJob || !input.value) return;
  try {
    const result = await post("reply", {id: state.screenJob, text: input.value, mode: "steer", requestId: newRequestId()});
    input.value = "";
    $("screen-said").textContent = describeReply(result);
  } catch (error) { $("screen-said").textContent = error.message; }
}

// -- push ---------------------------------------------------------------------------------

function offerPush() {
  const button = $("push-on");
  const able = state.pushKey && window.isSecureContext && "serviceWorker" in navigator && "PushManager" in window;
  button.hidden = !able;
  if (!able) return;
  button.onclick = async () => {
    try {
      const registration = await navigator.serviceWorker.register("/sw.js");
      const key = Uint8Array.from(atob(state.pushKey.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
      const subscription = await registration.pushManager.subscribe({userVisibleOnly: true, applicationServerKey: key});
      await post("push", {subscription: subscription.toJSON()});
      button.textContent = "Notifications on";
      button.disabled = true;
    } catch (error) { say("notifications: " + error.message); }
  };
}

// -- start --------------------------------------------------------------------------------

document.addEventListener("DOMContentLoaded", () => {
  $("readonly-note").hidden = !READ_ONLY;
  if (READ_ONLY) document.body.classList.add("read-only");
  for (const button of document.querySelectorAll("#keybar button")) {
    button.disabled = READ_ONLY;
    button.addEventListener("click", () => sendKey(button));
  }
  $("type-text").disabled = READ_ONLY;
  $("type-form").querySelector("button").disabled = READ_ONLY;
  $("type-form").addEventListener("submit", typeText);
  $("inbox-more").addEventListener("click", () => { state.inboxAll = true; schedule(true); });
  window.addEventListener("hashchange", route);
  document.addEventListener("visibilitychange", tellView);
  route();
  take(JSON.parse($("roost-snapshot").textContent));     // the fleet as the page was served
  connect();
});
