// rocketstore console: plain JavaScript, no framework. Each page is a
// function that fetches /api/... and renders into #page.
"use strict";

const $ = (sel) => document.querySelector(sel);

// el builds an element: el("td", {class: "num"}, "text", child, ...).
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function table(id, headers, rows) {
  return el("table", { id },
    el("thead", {}, el("tr", {}, headers.map((h) => el("th", { class: h.num ? "num" : null }, h.label || h)))),
    el("tbody", {}, rows));
}

function fmtTime(ms) {
  if (!ms || ms <= 0) return "-";
  const d = new Date(ms);
  const p = (n, w = 2) => String(n).padStart(w, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}

function showError(msg) {
  const e = $("#error");
  e.textContent = msg;
  e.classList.toggle("hidden", !msg);
}

function notice(msg) {
  const e = $("#notice");
  e.textContent = msg;
  e.classList.toggle("hidden", !msg);
}

async function api(path, body) {
  const opts = body === undefined ? {} : {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-Rocketstore-Console": "1" },
    body: JSON.stringify(body),
  };
  const resp = await fetch("api/" + path, opts);
  const data = await resp.json().catch(() => ({ error: resp.statusText }));
  if (!resp.ok) throw new Error(data.error || resp.statusText);
  return data;
}

// confirmAction shows the modal and resolves true on Confirm.
function confirmAction(text) {
  return new Promise((resolve) => {
    $("#modal-text").textContent = text;
    $("#modal").classList.remove("hidden");
    const done = (ok) => {
      $("#modal").classList.add("hidden");
      $("#modal-yes").onclick = $("#modal-no").onclick = null;
      resolve(ok);
    };
    $("#modal-yes").onclick = () => done(true);
    $("#modal-no").onclick = () => done(false);
  });
}

function render(...nodes) {
  const page = $("#page");
  page.replaceChildren(...nodes.flat().filter((n) => n !== null && n !== undefined));
}

const link = (href, text) => el("a", { href }, text);
const enc = encodeURIComponent;

// ---- cluster and live charts

const samples = [];
let statsTimer = null;

function drawChart(canvas, points, color) {
  const ctx = canvas.getContext("2d");
  const w = canvas.width, h = canvas.height;
  ctx.clearRect(0, 0, w, h);
  ctx.strokeStyle = "#e3e7ee";
  for (let i = 1; i < 4; i++) { ctx.beginPath(); ctx.moveTo(0, (h * i) / 4); ctx.lineTo(w, (h * i) / 4); ctx.stroke(); }
  const max = Math.max(1, ...points) * 1.25; // headroom above the peak
  ctx.strokeStyle = color;
  ctx.lineWidth = 2;
  ctx.beginPath();
  points.forEach((v, i) => {
    const x = points.length < 2 ? 0 : (i * w) / (points.length - 1);
    const y = h - 4 - (v / max) * (h - 8);
    if (i === 0) ctx.moveTo(x, y); else ctx.lineTo(x, y);
  });
  ctx.stroke();
  ctx.fillStyle = "#6b7588";
  ctx.fillText(`${max.toFixed(1)}/s`, 4, 12);
  ctx.fillText("0", 4, h - 6);
}

// rateOver is the rate (msg/s) of key over the last `ms` of the samples,
// as the brokers' Put/Get TPS are computed (newest sample against the
// oldest one within the window); null with fewer than two samples.
function rateOver(key, ms) {
  if (samples.length < 2) return null;
  const last = samples.at(-1);
  const first = samples.find((x) => x.at >= last.at - ms) || samples[0];
  if (last.at <= first.at) return null;
  return Math.max(0, ((last[key] - first[key]) * 1000) / (last.at - first.at));
}

async function pollStats() {
  try {
    // The console samples the cluster every second (server side): the
    // whole history comes back, so the charts are full at page load.
    const h = await api("stats");
    samples.splice(0, samples.length, ...h.samples);
    const rates = (key) => samples.slice(1).map((x, i) => Math.max(0, ((x[key] - samples[i][key]) * 1000) / Math.max(1, x.at - samples[i].at)));
    const put = rates("putTotal"), get = rates("getTotal");
    const show = (id, key) => { const r = rateOver(key, 10000); $(id).textContent = r === null ? "…" : r.toFixed(1) + " msg/s"; };
    const cp = $("#chart-put"), cg = $("#chart-get");
    if (cp) { drawChart(cp, put, "#2b5797"); cp.dataset.points = put.length; show("#rate-put", "putTotal"); }
    if (cg) { drawChart(cg, get, "#1e8449"); cg.dataset.points = get.length; show("#rate-get", "getTotal"); }
  } catch (e) { /* the cluster page shows errors; charts keep their last points */ }
}

async function clusterPage() {
  const brokers = await api("cluster");
  render(
    el("h1", {}, "Cluster"),
    table("brokers", ["Cluster", "Broker", "ID", "Address", "Version", "Uptime", "Disk", "Put TPS (10s 1m 10m)", "Get TPS (10s 1m 10m)",
      { label: "Put total", num: true }, { label: "Got total", num: true }],
      brokers.map((b) => el("tr", {},
        el("td", {}, b.cluster), el("td", {}, b.name), el("td", {}, b.id), el("td", {}, b.addr),
        b.error ? el("td", { colspan: 7, class: "muted" }, "unreachable: " + b.error) : [
          el("td", { class: "version" }, b.version), el("td", {}, b.uptime),
          el("td", {}, b.disk + (b.diskRatio ? ` (${(b.diskRatio * 100).toFixed(1)}% used)` : "")),
          el("td", {}, b.putTps), el("td", {}, b.getTps),
          el("td", { class: "num" }, b.putTotal), el("td", { class: "num" }, b.getTotal)]))),
    el("h2", {}, "Live rates"),
    el("div", { class: "charts" },
      el("div", { class: "chart" }, el("div", {}, "Produce (10 s, as Put TPS) ", el("span", { id: "rate-put", class: "rate" }, "…")),
        el("canvas", { id: "chart-put", width: 420, height: 140 })),
      el("div", { class: "chart" }, el("div", {}, "Consume (10 s, as Get TPS) ", el("span", { id: "rate-get", class: "rate" }, "…")),
        el("canvas", { id: "chart-get", width: 420, height: 140 }))));
  pollStats();
}

// ---- replication

let replicationTimer = null;

function contactText(m) {
  const s = m.status;
  if (!s || m.role === "leader") return "-";
  if (s.lastContactMs < 0) return "never";
  return s.lastContactMs < 1000 ? s.lastContactMs + " ms ago" : (s.lastContactMs / 1000).toFixed(1) + " s ago";
}

async function replicationPage() {
  const g = await api("replication");
  if (!g.enabled) {
    render(el("h1", {}, "Replication"),
      el("p", { id: "replication-none", class: "muted" },
        "This node is not a replica of a broker group (its config has no raft: section)."));
    return;
  }
  const n = (v) => (v === undefined || v === null ? "-" : v);
  render(
    el("h1", {}, "Replication"),
    el("p", { id: "replication-group" }, `Group ${g.groupId} (brokerName ${g.brokerName}), leader ${g.leader || "none"}`),
    table("members", ["Node", "Raft address", "Role", "Health", { label: "Term", num: true }, { label: "Applied index", num: true },
      { label: "Lag entries", num: true }, { label: "Lag bytes", num: true }, "Last contact", { label: "Elections won", num: true },
      { label: "Snapshot installs", num: true }, { label: "Repaired records", num: true }, { label: "Scrub runs", num: true },
      { label: "Scrubbed bytes", num: true }],
      g.members.map((m) => {
        const s = m.status || {};
        return el("tr", { "data-node": m.nodeId, class: m.health === "ok" ? null : "unhealthy" },
          el("td", {}, m.nodeId), el("td", {}, m.addr), el("td", { class: "role" }, m.role), el("td", { class: "health" }, m.health),
          el("td", { class: "num" }, n(s.term)), el("td", { class: "num" }, n(s.appliedIndex)),
          el("td", { class: "num lag" }, m.status ? m.lagEntries : "-"), el("td", { class: "num" }, m.status ? m.lagBytes : "-"),
          el("td", {}, contactText(m)), el("td", { class: "num" }, n(s.electionsWon)), el("td", { class: "num" }, n(s.snapshotInstalls)),
          el("td", { class: "num repaired" }, n(s.repaired)), el("td", { class: "num" }, n(s.scrubRuns)), el("td", { class: "num" }, n(s.scrubbedBytes)));
      })),
    el("p", { class: "muted" }, "Each member answers for itself over its Raft port; lag is against the leader's applied index and " +
      "CommitLog offset. Elections, snapshot installs, repairs and scrub runs count since each member started. Refreshed every 2 s."));
}

// ---- topics

async function topicsPage() {
  const topics = await api("topics");
  const create = el("form", { id: "create-topic-form" },
    el("label", {}, "Topic ", el("input", { id: "new-topic", required: true, placeholder: "name" })),
    el("label", {}, "Read queues ", el("input", { id: "new-read", type: "number", value: 4 })),
    el("label", {}, "Write queues ", el("input", { id: "new-write", type: "number", value: 4 })),
    el("label", {}, "Perm ", el("select", { id: "new-perm" }, el("option", { value: 6 }, "read+write"),
      el("option", { value: 4 }, "read"), el("option", { value: 2 }, "write"))),
    el("button", { id: "create-topic", type: "submit" }, "Create topic"));
  create.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const name = $("#new-topic").value.trim();
    await run(async () => {
      await api("topic", { topic: name, readQueueNums: +$("#new-read").value, writeQueueNums: +$("#new-write").value, perm: +$("#new-perm").value });
      notice(`Topic ${name} created.`);
      location.hash = "#/topic/" + enc(name);
    });
  });
  render(
    el("h1", {}, "Topics"),
    create,
    table("topics", ["Topic", "Kind", { label: "Queues", num: true }, "Perm", ""],
      topics.map((t) => el("tr", { "data-topic": t.name },
        el("td", {}, link("#/topic/" + enc(t.name), t.name)), el("td", {}, t.kind),
        el("td", { class: "num" }, t.queues), el("td", { class: "perm" }, permWords(t.perm)),
        el("td", {}, t.kind === "system" ? "" : el("button", { class: "danger delete-topic", onclick: () => deleteTopic(t.name) }, "Delete"))))));
}

// permWords names a topic's permission bits as the create form does:
// 6 is read+write; RocketMQ's inherit bit (1, on system topics) shows too.
function permWords(perm) {
  const words = [];
  if (perm & 4) words.push("read");
  if (perm & 2) words.push("write");
  if (perm & 1) words.push("inherit");
  return words.length ? words.join("+") : "none";
}

async function deleteTopic(name) {
  if (!(await confirmAction(`Delete topic ${name}? Its queues and their messages become unreachable.`))) return;
  await run(async () => {
    await api("topic/delete", { topic: name });
    notice(`Topic ${name} deleted.`);
    route();
  });
}

async function topicPage(name) {
  const t = await api("topic?topic=" + enc(name));
  render(
    el("h1", {}, "Topic ", el("span", { id: "topic-name" }, t.topic)),
    table("queues", ["Broker", { label: "Queue", num: true }, { label: "Min offset", num: true }, { label: "Max offset", num: true }, "Last stored"],
      t.queues.map((q) => el("tr", {}, el("td", {}, q.broker), el("td", { class: "num" }, q.queueId),
        el("td", { class: "num" }, q.minOffset), el("td", { class: "num" }, q.maxOffset), el("td", {}, fmtTime(q.lastUpdated))))),
    t.timersPending == null ? null : el("p", {}, "Timer messages pending: ", el("span", { id: "topic-timers", class: "num" }, t.timersPending)),
    el("h2", {}, "Consumer groups"),
    t.groups.length ? el("ul", { id: "topic-groups" }, t.groups.map((g) => el("li", {}, link("#/group/" + enc(g), g)))) : el("p", { class: "muted" }, "None."),
    el("p", {}, link("#/messages?topic=" + enc(t.topic), "Search its messages")));
}

// ---- consumer groups

async function groupsPage() {
  const groups = await api("groups");
  const show = groups.filter((g) => !g.system);
  render(
    el("h1", {}, "Consumer groups"),
    table("groups", ["Group", { label: "Online clients", num: true }, { label: "Topics", num: true }, { label: "Lag", num: true }, "Dead letters"],
      show.map((g) => el("tr", { "data-group": g.name }, el("td", {}, link("#/group/" + enc(g.name), g.name)),
        el("td", { class: "num" }, g.online), el("td", { class: "num" }, g.topics), el("td", { class: "num" }, g.lag),
        el("td", {}, g.hasDlq ? link("#/dlq?group=" + enc(g.name), "browse") : "")))),
    el("p", { class: "muted" }, `${groups.length - show.length} system groups hidden.`));
}

async function groupPage(name) {
  const g = await api("group?group=" + enc(name));
  // The group's own topics first: a reset is almost never meant for its
  // %RETRY% topic, which would otherwise sort first and be the default.
  const retry = (t) => (t.startsWith("%RETRY%") ? 1 : 0);
  const topics = [...new Set(g.queues.map((q) => q.topic))].sort((a, b) => retry(a) - retry(b) || a.localeCompare(b));
  const form = el("form", { id: "reset-form" },
    el("label", {}, "Topic ", el("select", { id: "reset-topic" }, topics.map((t) => el("option", { value: t }, t)))),
    el("label", {}, "To ", el("input", { id: "reset-time", value: "start", title: "start, end, now, YYYY-MM-DDThh:mm:ss (local time) or milliseconds since the epoch" })),
    el("button", { id: "reset-offset", type: "submit", class: "danger" }, "Reset offset"));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const topic = $("#reset-topic").value, time = $("#reset-time").value.trim();
    if (!(await confirmAction(`Reset the offsets of ${name} on ${topic} to "${time}"? The group will consume from there.`))) return;
    await run(async () => {
      const r = await api("group/reset", { group: name, topic, time });
      notice(`Offsets of ${name} on ${topic} reset: ` + r.offsets.map((o) => `queue ${o.queueId} → ${o.offset}`).join(", "));
      await groupPage(name);
    });
  });
  render(
    el("h1", {}, "Consumer group ", el("span", { id: "group-name" }, g.group)),
    el("p", {}, "Total lag: ", el("strong", { id: "group-lag" }, g.lag)),
    el("h2", {}, "Connections"),
    g.connections.length ? table("connections", ["Client ID", "Address", "Language", "Version"],
      g.connections.map((c) => el("tr", {}, el("td", {}, c.clientId), el("td", {}, c.clientAddr), el("td", {}, c.language), el("td", {}, c.version))))
      : el("p", { class: "muted", id: "connections" }, "No client online."),
    Object.keys(g.subscriptions).length ? el("p", {}, "Subscriptions: ", Object.entries(g.subscriptions).map(([t, s]) => el("span", { class: "tag" }, `${t}: ${s}`))) : null,
    el("h2", {}, "Lag per queue"),
    table("group-queues", ["Topic", "Broker", { label: "Queue", num: true }, { label: "Broker offset", num: true }, { label: "Consumer offset", num: true }, { label: "Lag", num: true }, "Last consumed"],
      g.queues.map((q) => el("tr", {}, el("td", {}, q.topic), el("td", {}, q.broker), el("td", { class: "num" }, q.queueId),
        el("td", { class: "num" }, q.brokerOffset), el("td", { class: "num" }, q.consumerOffset), el("td", { class: "num lag" }, q.lag),
        el("td", {}, fmtTime(q.lastTimestamp))))),
    el("h2", {}, "Reset offset"),
    topics.length ? form : el("p", { class: "muted" }, "The group has no offsets yet."));
}

// ---- messages

function messageRows(msgs, withResend) {
  return msgs.map((m) => el("tr", { "data-msgid": m.msgId },
    el("td", {}, link("#/message/" + enc(m.msgId), m.msgId)), el("td", {}, m.topic), el("td", { class: "num" }, m.queueId),
    el("td", { class: "num" }, m.queueOffset), el("td", {}, fmtTime(m.storeTimestamp)), el("td", {}, m.tags), el("td", {}, m.keys),
    el("td", { class: "body" }, m.bodyEncoding === "base64" ? "(binary, base64) " + m.body : m.body),
    withResend ? el("td", {}, el("button", { class: "resend", onclick: () => resend(m) }, "Resend")) : null));
}

const msgHeaders = ["Message ID", "Topic", { label: "Queue", num: true }, { label: "Offset", num: true }, "Stored", "Tags", "Keys", "Body"];

async function messagesPage(params) {
  const search = el("form", { id: "search-form" },
    el("label", {}, "Topic ", el("input", { id: "search-topic", value: params.get("topic") || "" })),
    el("label", {}, "Key ", el("input", { id: "search-key" })),
    el("label", {}, "From ", el("input", { id: "search-begin", placeholder: "YYYY-MM-DDThh:mm" })),
    el("label", {}, "To ", el("input", { id: "search-end", placeholder: "YYYY-MM-DDThh:mm" })),
    el("label", {}, "or message ID ", el("input", { id: "search-id", size: 34 })),
    el("button", { id: "search", type: "submit" }, "Search"));
  const results = el("div", { id: "results-box" });
  search.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const q = new URLSearchParams();
    const v = (id) => $(id).value.trim();
    if (v("#search-id")) q.set("msgId", v("#search-id"));
    else {
      q.set("topic", v("#search-topic"));
      if (v("#search-key")) q.set("key", v("#search-key"));
      if (v("#search-begin")) q.set("begin", v("#search-begin"));
      if (v("#search-end")) q.set("end", v("#search-end"));
    }
    await run(async () => {
      const msgs = await api("messages?" + q);
      results.replaceChildren(el("p", { id: "result-count" }, `${msgs.length} message(s)`), table("results", msgHeaders, messageRows(msgs, false)));
    });
  });
  const send = el("form", { id: "send-form" },
    el("label", {}, "Topic ", el("input", { id: "send-topic", value: params.get("topic") || "" })),
    el("label", {}, "Tags ", el("input", { id: "send-tags" })),
    el("label", {}, "Keys ", el("input", { id: "send-keys" })),
    el("label", {}, "Body ", el("input", { id: "send-body", size: 30 })),
    el("button", { id: "send-message", type: "submit" }, "Send"),
    el("span", { id: "send-result", class: "muted" }));
  send.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    await run(async () => {
      const r = await api("message", { topic: $("#send-topic").value.trim(), tags: $("#send-tags").value, keys: $("#send-keys").value, body: $("#send-body").value });
      $("#send-result").textContent = ` sent: ${r.msgId} (queue ${r.queueId}, offset ${r.queueOffset})`;
    });
  });
  render(el("h1", {}, "Messages"), el("h2", {}, "Search"), search, results, el("h2", {}, "Send a message"), send);
}

async function messagePage(id) {
  const m = await api("message?msgId=" + enc(id));
  render(
    el("h1", {}, "Message ", el("span", { id: "message-id" }, m.msgId)),
    table("message-fields", ["Field", "Value"], [
      ["Topic", m.topic], ["Queue", m.queueId], ["Queue offset", m.queueOffset], ["Stored", fmtTime(m.storeTimestamp)],
      ["Born", fmtTime(m.bornTimestamp) + " from " + m.bornHost], ["Tags", m.tags], ["Keys", m.keys],
      ["Reconsume times", m.reconsumeTimes], ["Body size", m.bodySize + " bytes"]].map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", {}, v)))),
    el("h2", {}, "Body" + (m.bodyEncoding === "base64" ? " (binary, base64)" : "")),
    el("pre", { id: "message-body", class: "panel body" }, m.body),
    el("h2", {}, "Properties"),
    table("properties", ["Name", "Value"], Object.keys(m.properties || {}).sort().map((k) => el("tr", {}, el("td", {}, k), el("td", {}, m.properties[k])))),
    el("h2", {}, "Consumption"),
    Object.keys(m.consumption || {}).length
      ? table("consumption", ["Group", "State"], Object.entries(m.consumption).map(([g, s]) => el("tr", {}, el("td", {}, g), el("td", {}, el("span", { class: "tag " + s }, s)))))
      : el("p", { class: "muted", id: "consumption" }, "No consumer group has consumed this topic."));
}

// ---- dead letters

async function dlqPage(params) {
  const group = params.get("group") || "";
  const form = el("form", { id: "dlq-form" },
    el("label", {}, "Group ", el("input", { id: "dlq-group", value: group })),
    el("button", { id: "dlq-load", type: "submit" }, "Browse"));
  form.addEventListener("submit", (ev) => { ev.preventDefault(); location.hash = "#/dlq?group=" + enc($("#dlq-group").value.trim()); });
  if (!group) { render(el("h1", {}, "Dead letters"), form); return; }
  const msgs = await api("dlq?group=" + enc(group));
  render(el("h1", {}, "Dead letters of ", group), form,
    el("p", { id: "dlq-count" }, `${msgs.length} message(s)`),
    table("dlq-messages", [...msgHeaders, ""], messageRows(msgs, true)));
}

async function resend(m) {
  const origin = (m.properties || {}).RETRY_TOPIC || "its topic";
  if (!(await confirmAction(`Send message ${m.msgId} again to ${origin}?`))) return;
  await run(async () => {
    const r = await api("dlq/resend", { msgId: m.msgId });
    notice(`Resent to ${r.topic} as ${r.msgId}.`);
  });
}

// ---- routing

// run runs an action, showing its error; a user action (not a page
// load) also clears the last notice.
async function run(f, userAction = true) {
  showError("");
  if (userAction) notice("");
  try { await f(); } catch (e) { showError(e.message); }
}

async function route() {
  const hash = location.hash || "#/cluster";
  const [path, query] = hash.slice(1).split("?");
  const params = new URLSearchParams(query || "");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  document.querySelectorAll("nav a").forEach((a) => a.classList.toggle("active", a.id === "nav-" + (parts[0] === "topic" ? "topics" : parts[0] === "group" ? "groups" : parts[0] === "message" ? "messages" : parts[0])));
  clearInterval(statsTimer);
  clearInterval(replicationTimer);
  showError("");
  await run(async () => {
    switch (parts[0]) {
      case "topics": return topicsPage();
      case "topic": return topicPage(parts[1]);
      case "groups": return groupsPage();
      case "group": return groupPage(parts[1]);
      case "messages": return messagesPage(params);
      case "message": return messagePage(parts[1]);
      case "dlq": return dlqPage(params);
      case "replication":
        await replicationPage();
        replicationTimer = setInterval(() => replicationPage().catch((e) => showError(e.message)), 2000);
        return;
      default:
        await clusterPage();
        statsTimer = setInterval(pollStats, 1000);
    }
  }, false);
}

window.addEventListener("hashchange", route);
route();
