// ble web: the page. Plain JavaScript, no framework. Everything the server says arrives as JSON on one WebSocket;
// every request carries an id that the answer echoes. Text from devices is only ever set as textContent.
"use strict";

const $ = (id) => document.getElementById(id);
const el = (tag, props = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === "class") node.className = v; else if (k === "text") node.textContent = v; else if (k.startsWith("on")) node.addEventListener(k.slice(2), v); else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c);
  return node;
};

const state = {
  readOnly: false, devices: new Map(), history: new Map(), plotted: new Set(), expanded: new Set(),
  links: new Map(), selectedLink: null, series: new Map(), chartKey: null, virtuals: [], trace: [], traceCount: 0,
  nextId: 1, pending: new Map(), start: performance.now(),
};
const colors = ["#0a66c2", "#d9480f", "#2b8a3e", "#862e9c", "#e67700", "#c2255c", "#1098ad", "#5c940d"];
let socket = null;

// ---- messages and requests ----
function say(text, isError = false) {
  const box = $("messages");
  const line = el("div", { class: isError ? "error" : "", text });
  box.prepend(line);
  while (box.childElementCount > 4) box.lastElementChild.remove();
  setTimeout(() => line.remove(), isError ? 15000 : 5000);
}

function request(op, fields = {}) {
  return new Promise((resolve, reject) => {
    if (!socket || socket.readyState !== WebSocket.OPEN) { reject(new Error("not connected to the server")); return; }
    const id = state.nextId++;
    state.pending.set(id, { resolve, reject });
    socket.send(JSON.stringify({ id, op, ...fields }));
  });
}

function act(op, fields, done) {
  request(op, fields).then((answer) => { if (done) done(answer); }, (error) => say(error.message, true));
}

function connectSocket() {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  socket = new WebSocket(`${scheme}//${location.host}/ws`);
  socket.onopen = () => { $("status").textContent = "connected"; };
  socket.onclose = () => { $("status").textContent = "disconnected — retrying"; setTimeout(connectSocket, 2000); };
  socket.onmessage = (event) => {
    let message;
    try { message = JSON.parse(event.data); } catch { return; }
    handle(message);
  };
}

function handle(m) {
  const waiting = m.id != null ? state.pending.get(m.id) : undefined;
  if (waiting) state.pending.delete(m.id);
  switch (m.type) {
    case "hello": hello(m); break;
    case "devices": for (const d of m.devices) heard(d, m.time); state.dropped = m.dropped; scheduleDevices(); break;
    case "link": state.links.set(m.address, m); if (!state.selectedLink) state.selectedLink = m.address; renderLinks(); break;
    case "linkState":
      if (m.state === "disconnected") { state.links.delete(m.address); renderLinks(); }
      say(`${m.address}: ${m.state}`);
      break;
    case "notifications": for (const v of m.values) notified(v); break;
    case "virtuals": state.virtuals = m.virtuals; renderVirtuals(); break;
    case "trace": traced(m); break;
    case "notice": say(m.message); break;
    case "prompt": showPrompt(m); break;
    case "promptClosed": if (state.prompt && state.prompt.prompt === m.prompt) hidePrompt(); if (m.reason) say(`pairing prompt ${m.reason}`, true); break;
    case "secured": {
      const link = state.links.get(m.address);
      if (link) { link.security = m.security; renderLinks(); }
      say(`${m.address}: ${m.security}`);
      break;
    }
    case "done": if (waiting) waiting.resolve(m); break;
    case "descriptionError":
      showDescriptionError(m);
      if (waiting) waiting.reject(new Error(`GATT file: line ${m.line ?? "?"}: ${m.message}`)); else say(m.message, true);
      break;
    case "error":
      if (waiting) waiting.reject(new Error(m.message)); else say(m.message, true);
      break;
  }
}

function hello(m) {
  state.readOnly = m.readOnly;
  state.traceOn = m.trace;
  document.body.classList.toggle("read-only", m.readOnly);
  $("status").textContent = `connected — ${m.hci} (${m.address})${m.readOnly ? " — read-only" : ""}`;
  $("controller-info").textContent = m.controller.join("\n");
  const select = $("simulated");
  select.replaceChildren(...m.simulated.map((name) => el("option", { value: name, text: name })));
  for (const d of m.devices) heard(d, null);
  for (const l of m.links) state.links.set(l.address, l);
  state.virtuals = m.virtuals;
  renderDevices(); renderLinks(); renderVirtuals();
}

// ---- scanner ----
function heard(update, time) {
  // A row comes whole, or as the address, RSSI, interval and count of a row the page has (the rest unchanged).
  const known = state.devices.get(update.address);
  if (!known && update.raw === undefined) return;   // the whole row follows within 5 s
  const d = known ? Object.assign(known, update) : update;
  state.devices.set(d.address, d);
  let h = state.history.get(d.address);
  if (!h) { h = []; state.history.set(d.address, h); }
  h.push({ t: (performance.now() - state.start) / 1000, rssi: d.rssi });
  if (h.length > 600) h.splice(0, h.length - 600);
}

function visibleDevices() {
  const name = $("filter-name").value.trim().toLowerCase();
  const service = $("filter-service").value.trim().toLowerCase();
  const floor = Number($("filter-rssi").value);
  const list = [...state.devices.values()].filter((d) =>
    (!name || (d.name ?? "").toLowerCase().includes(name)) &&
    (!service || d.services.some((s) => s.uuid.toLowerCase().includes(service) || (s.name ?? "").toLowerCase().includes(service))) &&
    (!Number.isFinite(floor) || d.rssi >= floor));
  const sort = $("sort").value;
  list.sort((a, b) => sort === "name" ? (a.name ?? "\uffff").localeCompare(b.name ?? "\uffff") || a.address.localeCompare(b.address)
    : sort === "address" ? a.address.localeCompare(b.address)
    : sort === "interval" ? (a.intervalMs ?? 1e9) - (b.intervalMs ?? 1e9) || a.address.localeCompare(b.address)
    : b.rssi - a.rssi || a.address.localeCompare(b.address));
  return list;
}

// At most one redraw per animation frame, and only while the scanner is shown.
let devicesScheduled = false;
function scheduleDevices() {
  if (devicesScheduled) return;
  devicesScheduled = true;
  requestAnimationFrame(() => { devicesScheduled = false; if ($("view-scanner").classList.contains("active")) renderDevices(); });
}

const maxRows = 200;   // the rows drawn: with 1,000 advertisers, the filters narrow the rest

// The AD types the Core Specification Supplement names (Part A, 1), for the raw view.
const adTypeNames = { 0x01: "Flags", 0x02: "Incomplete 16-bit UUIDs", 0x03: "Complete 16-bit UUIDs", 0x04: "Incomplete 32-bit UUIDs",
  0x05: "Complete 32-bit UUIDs", 0x06: "Incomplete 128-bit UUIDs", 0x07: "Complete 128-bit UUIDs", 0x08: "Shortened Local Name",
  0x09: "Complete Local Name", 0x0A: "TX Power Level", 0x16: "Service Data (16-bit UUID)", 0x19: "Appearance",
  0x1B: "LE Bluetooth Device Address", 0x20: "Service Data (32-bit UUID)", 0x21: "Service Data (128-bit UUID)", 0xFF: "Manufacturer Specific Data" };

function adLine(s) {
  const name = adTypeNames[s.type] ?? "AD type";
  let text = `${name} (0x${s.type.toString(16).padStart(2, "0")}): ${s.hex}`;
  if (s.type === 0x08 || s.type === 0x09) {
    const bytes = s.hex.match(/../g)?.map((h) => parseInt(h, 16)) ?? [];
    text += `  "${new TextDecoder().decode(new Uint8Array(bytes))}"`;
  }
  return text;
}

// Rows are kept per device and updated in place (a button being clicked is never replaced under the pointer); they
// are moved only when the order changes.
const deviceRows = new Map();

function setText(node, text) { if (node.textContent !== text) node.textContent = text; }

function deviceRow(d) {
  let r = deviceRows.get(d.address);
  if (!r) {
    const box = el("input", { type: "checkbox", title: "plot its RSSI" });
    box.addEventListener("change", () => { box.checked ? state.plotted.add(d.address) : state.plotted.delete(d.address); drawRSSI(); });
    const connect = el("button", { onclick: () => openDevice(d.address) });
    const cells = [el("td", {}, box), el("td"), el("td", { class: "mono" }), el("td", { class: "num" }), el("td", { class: "num" }),
      el("td", { class: "num" }), el("td"), el("td"), el("td", {}, connect)];
    cells[1].style.cursor = "pointer";
    cells[1].addEventListener("click", () => { state.expanded.has(d.address) ? state.expanded.delete(d.address) : state.expanded.add(d.address); renderDevices(); });
    const details = el("tr", { class: "details" }, el("td", { colspan: "9" }));
    r = { row: el("tr", { "data-address": d.address }, ...cells), cells, box, connect, details };
    deviceRows.set(d.address, r);
  }
  const c = r.cells;
  r.box.checked = state.plotted.has(d.address);
  setText(c[1], d.name ?? "(no name)");
  c[1].className = d.name ? "" : "muted";
  setText(c[2], `${d.address} ${d.addressType}`);
  setText(c[3], `${d.rssi} dBm`);
  setText(c[4], d.txPower == null ? "" : `${d.txPower} dBm`);
  setText(c[5], d.intervalMs == null ? "" : `${d.intervalMs} ms`);
  setText(c[6], d.services.map((s) => s.name ? `${s.uuid} ${s.name}` : s.uuid).join(", "));
  setText(c[7], d.detail + (d.connectable ? "" : " (not connectable)"));
  setText(r.connect, state.links.has(d.address) ? "Open" : "Connect");
  r.connect.disabled = !d.connectable;
  if (state.expanded.has(d.address)) {
    const lines = [`raw ${d.raw}`, ...d.ad.map(adLine), `${d.reports} reports`];
    setText(r.details.firstChild, lines.join("\n"));
  }
  return r;
}

function renderDevices() {
  const body = $("devices").tBodies[0];
  const list = visibleDevices();
  const wanted = [];
  for (const d of list.slice(0, maxRows)) {
    const r = deviceRow(d);
    wanted.push(r.row);
    if (state.expanded.has(d.address)) wanted.push(r.details);
  }
  const current = body.children;
  const same = current.length === wanted.length && wanted.every((row, i) => current[i] === row);
  if (!same) body.replaceChildren(...wanted);
  $("device-count").textContent = `${list.length} of ${state.devices.size} devices` + (list.length > maxRows ? ` (the first ${maxRows} shown: filter to see others)` : "")
    + (state.dropped ? ` — ${state.dropped} updates skipped while a tab was behind` : "");
  drawRSSI();
}

function drawRSSI() {
  const canvas = $("rssi-plot"), g = canvas.getContext("2d");
  const w = canvas.width, h = canvas.height, left = 40;
  g.clearRect(0, 0, w, h);
  g.fillStyle = "#6e6e73"; g.font = "11px system-ui";
  // The last minute, or since the first point of the plotted devices when that is shorter (at least 10 s).
  const now = (performance.now() - state.start) / 1000;
  const firsts = [...state.plotted].map((a) => (state.history.get(a) ?? [])[0]?.t).filter((t) => t != null);
  const span = Math.min(60, Math.max(10, now - Math.min(now, ...firsts)));
  const top = -20, bottom = -110;
  const y = (rssi) => (top - Math.max(bottom, Math.min(top, rssi))) / (top - bottom) * (h - 20) + 10;
  const x = (t) => left + (t - (now - span)) / span * (w - left - 10);
  for (let r = -30; r >= -100; r -= 20) { g.fillText(`${r}`, 4, y(r) + 4); g.strokeStyle = "#eee"; g.beginPath(); g.moveTo(left, y(r)); g.lineTo(w, y(r)); g.stroke(); }
  let points = 0, i = 0;
  for (const address of state.plotted) {
    const h2 = state.history.get(address) ?? [];
    const color = colors[i++ % colors.length];
    g.strokeStyle = color; g.fillStyle = color; g.beginPath();
    let started = false;
    for (const p of h2) {
      if (p.t < now - span) continue;
      if (started) g.lineTo(x(p.t), y(p.rssi)); else { g.moveTo(x(p.t), y(p.rssi)); started = true; }
      points++;
    }
    g.stroke();
    const d = state.devices.get(address);
    g.fillText(d?.name ?? address, w - 160, 14 + 13 * (i - 1));
  }
  if (state.plotted.size === 0) { g.fillStyle = "#6e6e73"; g.fillText("tick devices in the Plot column to draw their RSSI over time", left + 10, h / 2); }
  canvas.dataset.points = String(points);
}

// ---- pairing prompts (every tab shows them; the first answer counts) ----
function showPrompt(m) {
  const box = $("pairing"), input = $("pairing-passkey");
  if (m.kind === "display") { say(`type ${m.number} on ${m.peer} to pair`); return; }
  state.prompt = m;
  input.value = "";
  input.hidden = m.kind !== "passkey";
  $("pairing-no").textContent = m.kind === "passkey" ? "Cancel" : "No";
  $("pairing-ok").textContent = m.kind === "passkey" ? "OK" : "Yes, the same";
  $("pairing-text").textContent = m.kind === "passkey" ? `Pairing with ${m.peer}: type the passkey it shows`
    : `Pairing with ${m.peer}: does it show ${m.number}?`;
  box.hidden = false;
  if (m.kind === "passkey") input.focus();
}

function hidePrompt() { $("pairing").hidden = true; state.prompt = null; }

function answerPrompt(yes) {
  const m = state.prompt;
  if (!m) return;
  const fields = { prompt: m.prompt, confirmed: yes };
  if (m.kind === "passkey" && yes) fields.passkey = $("pairing-passkey").value.trim();
  request("pairingAnswer", fields).then(hidePrompt, (e) => say(e.message, true));
}

// ---- device ----
function openDevice(address) {
  state.selectedLink = address;
  showView("device");
  if (!state.links.has(address)) { say(`connecting to ${address}…`); act("connect", { address }, () => say(`connected to ${address}`)); }
  renderLinks();
}

function renderLinks() {
  const select = $("link-select");
  if (!state.selectedLink || (!state.links.has(state.selectedLink) && !state.devices.has(state.selectedLink))) {
    state.selectedLink = state.links.keys().next().value ?? null;
  }
  const options = [...state.links.values()].map((l) => el("option", { value: l.address, text: `${l.name ?? "(no name)"} ${l.address}` }));
  const link = state.links.get(state.selectedLink);
  if (state.selectedLink && !link) options.push(el("option", { value: state.selectedLink, text: `${state.selectedLink} (not connected)` }));
  select.replaceChildren(...options);
  if (state.selectedLink) select.value = state.selectedLink;
  $("link-info").textContent = link ? `MTU ${link.mtu}, PHY ${link.phy}, ${link.services.length} services` + (link.security ? `, ${link.security}` : "")
    : state.selectedLink ? `${state.selectedLink} is not connected (Connect in the Scanner)` : "not connected: connect from the Scanner";
  renderTree(link);
  scheduleDevices();
}

function valueText(v) {
  let text = v.hex === "" ? "(empty)" : v.hex;
  if (v.text != null) text = `"${v.text}" (${text})`;
  if (v.decoded) text += ` = ${v.decoded}`;
  return text;
}

function renderTree(link) {
  const tree = $("gatt-tree");
  if (!link) { tree.replaceChildren(); return; }
  tree.replaceChildren(...link.services.map((s) => el("div", { class: "service" },
    el("strong", { text: `${s.name ?? "service"} ${s.uuid}` }), el("span", { class: "muted", text: `  handles ${s.start}–${s.end}` }),
    ...s.characteristics.map((c) => characteristicView(link, c)))));
}

function characteristicView(link, c) {
  const out = el("span", { class: "value out", "data-handle": String(c.handle) });
  const show = (answer) => { out.textContent = valueText(answer); out.classList.remove("error"); };
  const fail = (error) => { out.textContent = error.message; out.classList.add("error"); };
  const props = c.properties;
  const box = el("div", { class: "characteristic", "data-uuid": c.uuid },
    el("span", { text: `${c.name ?? "characteristic"} ${c.uuid}` }), el("span", { class: "muted", text: ` 0x${c.handle.toString(16).padStart(4, "0")} [${props.join("|")}] ` }));
  if (props.includes("read")) box.append(el("button", { text: "Read", onclick: () => request("read", { address: link.address, handle: c.handle }).then(show, fail) }));
  if (props.includes("write") || props.includes("writeWithoutResponse")) {
    const input = el("input", { placeholder: "hex or text", class: "write" });
    const format = el("select", { class: "write" }, el("option", { value: "hex", text: "hex" }), el("option", { value: "text", text: "text" }));
    const write = el("button", { text: "Write", class: "write", onclick: () =>
      request("write", { address: link.address, handle: c.handle, value: input.value, format: format.value, withResponse: props.includes("write") })
        .then((a) => { out.textContent = `wrote ${a.written} bytes`; out.classList.remove("error"); }, fail) });
    box.append(input, format, write);
  }
  if (props.includes("notify") || props.includes("indicate")) {
    const key = `${link.address}/${c.handle}`;
    const sub = el("button", { text: c.subscribed ? "Unsubscribe" : "Subscribe", onclick: () => {
      if (c.subscribed) { act("unsubscribe", { address: link.address, handle: c.handle }); return; }
      state.chartKey = key; state.series.set(key, []);
      $("chart-title").textContent = `Live chart: ${c.name ?? c.uuid} of ${link.name ?? link.address}`;
      request("subscribe", { address: link.address, handle: c.handle }).then(() => {}, fail);
    } });
    box.append(sub);
  }
  box.append(out);
  for (const d of c.descriptors) {
    const dout = el("span", { class: "value" });
    box.append(el("div", { class: "descriptor" }, el("span", { class: "muted", text: `${d.name ?? "descriptor"} ${d.uuid} 0x${d.handle.toString(16).padStart(4, "0")} ` }),
      el("button", { text: "Read", onclick: () => request("read", { address: link.address, handle: d.handle })
        .then((a) => { dout.textContent = valueText(a); dout.classList.remove("error"); }, (e) => { dout.textContent = e.message; dout.classList.add("error"); }) }), dout));
  }
  return box;
}

function notified(v) {
  const key = `${v.address}/${v.handle}`;
  const link = state.links.get(v.address);
  if (link && state.selectedLink === v.address) {
    const out = document.querySelector(`#gatt-tree .out[data-handle="${v.handle}"]`);
    if (out) out.textContent = valueText(v);
  }
  if (v.number == null) return;
  let s = state.series.get(key);
  if (!s) { s = []; state.series.set(key, s); }
  s.push({ t: v.time, y: v.number, unit: v.unit });
  if (s.length > 300) s.splice(0, s.length - 300);
  if (!state.chartKey) state.chartKey = key;
  if (key === state.chartKey) { drawChart(); $("last-value").textContent = `${v.number} ${v.unit}  ${valueText(v)}`; }
}

function drawChart() {
  const canvas = $("value-chart"), g = canvas.getContext("2d"), w = canvas.width, h = canvas.height, left = 44;
  const s = state.series.get(state.chartKey) ?? [];
  g.clearRect(0, 0, w, h);
  canvas.dataset.points = String(s.length);
  if (s.length === 0) return;
  let lo = Math.min(...s.map((p) => p.y)), hi = Math.max(...s.map((p) => p.y));
  if (hi - lo < 1) { hi += 1; lo -= 1; }
  const t0 = s[0].t, t1 = Math.max(s[s.length - 1].t, t0 + 1);
  const x = (t) => left + (t - t0) / (t1 - t0) * (w - left - 10), y = (v) => h - 20 - (v - lo) / (hi - lo) * (h - 40);
  g.fillStyle = "#6e6e73"; g.font = "11px system-ui";
  g.fillText(String(hi), 4, y(hi) + 4); g.fillText(String(lo), 4, y(lo) + 4); g.fillText(s[s.length - 1].unit ?? "", left, 12);
  g.strokeStyle = "#d9480f"; g.lineWidth = 2; g.beginPath();
  s.forEach((p, i) => (i ? g.lineTo(x(p.t), y(p.y)) : g.moveTo(x(p.t), y(p.y))));
  g.stroke();
}

// ---- virtual devices ----
const exampleGATT = `{
  "name": "Web Thermo",
  "advertising": {"name": "Web Thermo", "services": ["1809", "180F"]},
  "services": [
    {
      "uuid": "1809",
      "characteristics": [
        {"uuid": "2A1C", "properties": ["indicate"],
         "notify": {"everyMs": 1000, "values": ["006C0100FF", "006D0100FF", "006E0100FF"]}}
      ]
    },
    {
      "uuid": "180F",
      "characteristics": [
        {"uuid": "2A19", "properties": ["read", "notify"], "value": "5A"}
      ]
    }
  ]
}`;

function renderGutter(badLine) {
  const count = $("gatt-text").value.split("\n").length;
  const lines = [];
  for (let i = 1; i <= count; i++) lines.push(el("span", { class: i === badLine ? "bad" : "", text: `${i}\n` }));
  $("gutter").replaceChildren(...lines);
}

function showDescriptionError(m) {
  $("gatt-error").className = "error";
  $("gatt-error").textContent = `line ${m.line ?? "?"}, column ${m.column ?? "?"} (${m.path}): ${m.message}`;
  renderGutter(m.line);
}

function renderVirtuals() {
  $("virtuals").replaceChildren(...state.virtuals.map((v) => el("li", {},
    el("span", { text: `#${v.id} ${v.name} (${v.kind}) ` }),
    el("button", { text: "Stop", class: "write", onclick: () => act("stopDevice", { device: v.id }) }))));
}

// ---- trace ----
function traced(m) {
  state.traceCount += m.skipped;
  state.traceSkipped = (state.traceSkipped ?? 0) + m.skipped;
  for (const p of m.packets) { state.traceCount++; state.trace.push({ n: state.traceCount, ...p }); }
  if (state.trace.length > 1000) state.trace.splice(0, state.trace.length - 1000);
  if ($("view-trace").classList.contains("active")) renderTrace();
}

function renderTrace() {
  const filter = $("trace-filter").value.trim().toLowerCase();
  const shown = state.trace.filter((p) => !filter || p.summary.toLowerCase().includes(filter) || p.dir.includes(filter)).slice(-300);
  $("trace").tBodies[0].replaceChildren(...shown.map((p) => el("tr", {},
    el("td", { text: String(p.n) }), el("td", { text: p.dir }), el("td", { text: p.summary }), el("td", { text: p.hex }))));
  $("trace-count").textContent = !state.traceOn ? "no trace: ble web was started with --no-trace"
    : `${state.traceCount} packets` + (state.traceSkipped ? ` (${state.traceSkipped} not listed: more than 1,000 a second)` : "");
}

// ---- views ----
function showView(name) {
  for (const b of document.querySelectorAll("#tabs button")) b.classList.toggle("active", b.dataset.view === name);
  for (const v of document.querySelectorAll(".view")) v.classList.toggle("active", v.id === `view-${name}`);
  if (name === "trace") renderTrace();
  if (name === "scanner") renderDevices();
}

for (const b of document.querySelectorAll("#tabs button")) b.addEventListener("click", () => showView(b.dataset.view));
for (const id of ["filter-name", "filter-service", "filter-rssi", "sort"]) $(id).addEventListener("input", renderDevices);
$("link-select").addEventListener("change", () => { state.selectedLink = $("link-select").value; renderLinks(); });
$("disconnect").addEventListener("click", () => { if (state.selectedLink) act("disconnect", { address: state.selectedLink }); });
$("set-phy").addEventListener("click", () => { if (state.selectedLink) act("setPHY", { address: state.selectedLink, phy: $("phy").value }, (a) => say(`PHY: ${a.phy}`)); });
$("pair").addEventListener("click", () => { if (state.selectedLink) act("pair", { address: state.selectedLink }); });
$("pairing-ok").addEventListener("click", () => answerPrompt(true));
$("pairing-no").addEventListener("click", () => answerPrompt(false));
$("pairing-passkey").addEventListener("keydown", (e) => { if (e.key === "Enter") answerPrompt(true); });
$("start-simulated").addEventListener("click", () => act("startDevice", { name: $("simulated").value }, () => say(`started ${$("simulated").value}`)));
$("gatt-text").value = exampleGATT;
// The file is checked by the server as one types (half a second after the last key), as serving it would.
let checkTimer = null;
$("gatt-text").addEventListener("input", () => {
  renderGutter(null);
  clearTimeout(checkTimer);
  checkTimer = setTimeout(() => {
    request("checkDescription", { text: $("gatt-text").value })
      .then(() => { $("gatt-error").textContent = ""; $("gatt-error").className = "ok"; $("gatt-error").textContent = "valid"; renderGutter(null); }, () => {});
  }, 500);
});
$("start-gatt").addEventListener("click", () => {
  $("gatt-error").textContent = "";
  request("startDescription", { text: $("gatt-text").value }).then(() => { renderGutter(null); say("serving the GATT file"); }, (e) => say(e.message, true));
});
$("adv-kind").addEventListener("change", () => {
  for (const label of document.querySelectorAll("label.adv")) label.hidden = !label.classList.contains($("adv-kind").value);
});
$("start-advertiser").addEventListener("click", () => {
  const kind = $("adv-kind").value;
  const fields = kind === "ibeacon" ? { uuid: $("adv-uuid").value.trim(), major: Number($("adv-major").value), minor: Number($("adv-minor").value) }
    : kind === "eddystoneURL" ? { url: $("adv-url").value.trim() } : { value: $("adv-data").value };
  act("startAdvertiser", { kind, ...fields }, () => say("advertising"));
});
$("trace-pause").addEventListener("change", () => act("trace", { paused: $("trace-pause").checked }));
$("trace-filter").addEventListener("input", renderTrace);
renderGutter(null);
setInterval(drawRSSI, 500);
connectSocket();
