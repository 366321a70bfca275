// The Redline page: a chat with the served models over /v1/chat/completions (streamed), and the
// route panel, kept current by polling /redline/status. No framework and no build step: this
// file is embedded in the binary as it is written.
"use strict";

const KEY_STORAGE = "redline.api-key";
// The panel follows a generation closely while the page runs one, and idles otherwise.
const POLL_BUSY_MS = 1000;
const POLL_IDLE_MS = 2500;
const CHART = { width: 320, height: 150, left: 34, right: 8, top: 10, bottom: 22, slots: 12 };
const SVG_NS = "http://www.w3.org/2000/svg";

const $ = (id) => document.getElementById(id);

/** A request the server refused, with its OpenAI error object's message and code. */
class ApiError extends Error {
  constructor(message, status, code) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
  }
}

const chat = { messages: [], abort: null, modelsFailed: false };
const poller = { timer: 0, inFlight: false };

// ---- API access ----

function apiHeaders(extra) {
  const headers = new Headers(extra || {});
  const key = sessionStorage.getItem(KEY_STORAGE);
  if (key) headers.set("Authorization", `Bearer ${key}`);
  return headers;
}

async function api(path, init = {}) {
  const response = await fetch(path, { ...init, headers: apiHeaders(init.headers), cache: "no-store" });
  if (!response.ok) throw await failure(response);
  return response;
}

/** The error a failed response carries; a 401 also asks for the API key. */
async function failure(response) {
  let message = `HTTP ${response.status} ${response.statusText}`.trim();
  let code = null;
  try {
    const body = await response.json();
    if (body && body.error && typeof body.error.message === "string") {
      message = body.error.message;
      code = body.error.code ?? null;
    }
  } catch (_) {
    // Not an error object: the status line is all there is to say.
  }
  if (response.status === 401 || code === "invalid_api_key") askForKey(message);
  return new ApiError(message, response.status, code);
}

function askForKey(message) {
  const section = $("key-section");
  const refused = sessionStorage.getItem(KEY_STORAGE) !== null;
  $("key-reason").textContent = refused
    ? `The server refused the key: ${message}`
    : `This server needs an API key: ${message}`;
  if (section.hidden) {
    section.hidden = false;
    $("api-key").focus();
  }
  if (!$("summary").dataset.loaded) $("summary").textContent = "This server needs an API key.";
}

function useKey(event) {
  event.preventDefault();
  const input = $("api-key");
  const key = input.value.trim();
  if (key === "") return;
  sessionStorage.setItem(KEY_STORAGE, key);
  input.value = "";
  $("key-section").hidden = true;
  $("message").focus();
  loadModels();
  poll();
}

// ---- Server-sent events from a fetch body ----

/** Yields the `data` of each event of a text/event-stream body. */
async function* serverSentEvents(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer = (buffer + value).replace(/\r\n/g, "\n");
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = block
          .split("\n")
          .filter((line) => line.startsWith("data:"))
          .map((line) => line.slice(5).replace(/^ /, ""))
          .join("\n");
        if (data !== "") yield data;
      }
    }
  } finally {
    reader.releaseLock();
  }
}

// ---- Chat ----

/** The sampling settings as request fields; throws on a value that cannot be sent. */
function sampling() {
  const body = {};
  const model = $("model").value;
  if (model) body.model = model;
  const number = (id, field, check) => {
    const input = $(id);
    if (input.value.trim() === "") return;
    const value = Number(input.value);
    const label = document.querySelector(`label[for="${id}"]`).textContent;
    if (!Number.isFinite(value) || !check(value)) throw new Error(`${label}: ${input.value} is not valid`);
    body[field] = value;
  };
  number("temperature", "temperature", (v) => v >= 0);
  number("top-p", "top_p", (v) => v > 0);
  number("max-tokens", "max_tokens", (v) => Number.isInteger(v) && v >= 1);
  number("seed", "seed", (v) => Number.isSafeInteger(v) && v >= 0);
  return body;
}

/** Adds a message to the conversation; returns its parts. */
function addMessage(role, text, state) {
  const article = document.createElement("article");
  article.className = `message ${role}`;
  article.dataset.state = state;
  const who = document.createElement("p");
  who.className = "who";
  who.textContent = role === "user" ? "You" : "Assistant";
  const status = document.createElement("span");
  status.className = "state";
  who.append(" ", status);
  const content = document.createElement("div");
  content.className = "content";
  content.textContent = text;
  const meta = document.createElement("p");
  meta.className = "meta";
  article.append(who, content, meta);
  $("conversation").append(article);
  $("empty").hidden = true;
  const scroll = () => { $("conversation").scrollTop = $("conversation").scrollHeight; };
  scroll();
  const message = {
    article,
    set text(value) { content.textContent = value; scroll(); },
    end(state, note) {
      article.dataset.state = state;
      status.textContent = state === "done" ? "" : `(${state})`;
      meta.textContent = note;
      scroll();
    },
  };
  if (state === "streaming") status.textContent = "(answering…)";
  return message;
}

function setChatStatus(text, isError) {
  const status = $("chat-status");
  status.textContent = text;
  status.classList.toggle("error", Boolean(isError));
}

function setBusy(busy) {
  $("send").disabled = busy;
  $("stop").disabled = !busy;
  $("conversation").setAttribute("aria-busy", String(busy));
}

function describe(finish, usage, started) {
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  const parts = [];
  if (usage) parts.push(`${usage.completion_tokens} tokens`);
  if (finish) parts.push(`finished: ${finish}`);
  parts.push(`${seconds} s`);
  return parts.join(" · ");
}

async function send() {
  const input = $("message");
  const text = input.value;
  if (chat.abort || text.trim() === "") return;
  let body;
  try {
    body = sampling();
  } catch (error) {
    setChatStatus(error.message, true);
    return;
  }
  chat.messages.push({ role: "user", content: text });
  input.value = "";
  addMessage("user", text, "done");
  const answer = addMessage("assistant", "", "streaming");
  body.messages = chat.messages.slice();
  body.stream = true;
  body.stream_options = { include_usage: true };
  const controller = new AbortController();
  chat.abort = controller;
  setBusy(true);
  setChatStatus("Generating…");
  poll();
  const started = performance.now();
  let content = "";
  let finish = null;
  let usage = null;
  try {
    const response = await api("/v1/chat/completions", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
      signal: controller.signal,
    });
    let ended = false;
    for await (const data of serverSentEvents(response)) {
      if (data === "[DONE]") {
        ended = true;
        break;
      }
      const chunk = JSON.parse(data);
      if (chunk.error) throw new ApiError(chunk.error.message, 500, chunk.error.code);
      if (chunk.usage) usage = chunk.usage;
      const choice = chunk.choices && chunk.choices[0];
      if (!choice) continue;
      if (choice.delta && typeof choice.delta.content === "string" && choice.delta.content !== "") {
        content += choice.delta.content;
        answer.text = content;
      }
      if (choice.finish_reason) finish = choice.finish_reason;
    }
    if (!ended) throw new Error("the answer's stream ended before it was complete");
    chat.messages.push({ role: "assistant", content });
    answer.end("done", describe(finish, usage, started));
    setChatStatus("");
  } catch (error) {
    if (error.name === "AbortError") {
      stopped(answer, content, started);
    } else {
      failed(answer, error, text);
    }
  } finally {
    if (chat.abort === controller) chat.abort = null;
    setBusy(false);
    poll();
  }
}

/** A generation the user stopped: what arrived stays the assistant's turn. */
function stopped(answer, content, started) {
  if (content !== "") {
    chat.messages.push({ role: "assistant", content });
    answer.end("stopped", `Stopped after ${((performance.now() - started) / 1000).toFixed(1)} s.`);
  } else {
    chat.messages.pop();
    answer.end("stopped", "Stopped before any text; this turn is left out of the conversation.");
  }
  setChatStatus("Stopped.");
  $("message").focus();
}

/** A request that failed: the server's message is shown and the text offered to send again. */
function failed(answer, error, text) {
  chat.messages.pop();
  answer.end("error", `Error: ${error.message}`);
  setChatStatus("The request failed; your message is back in the box.", true);
  const input = $("message");
  if (input.value === "") input.value = text;
}

function stop() {
  if (chat.abort) chat.abort.abort();
}

function clearConversation() {
  stop();
  chat.messages = [];
  $("conversation").replaceChildren();
  $("empty").hidden = false;
  setChatStatus("Conversation cleared.");
  $("message").focus();
}

function onMessageKey(event) {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    $("composer").requestSubmit();
  }
}

async function loadModels() {
  const select = $("model");
  try {
    const list = await (await api("/v1/models")).json();
    const previous = select.value;
    select.replaceChildren(
      ...list.data.map((model) => {
        const option = document.createElement("option");
        option.value = model.id;
        option.textContent = model.id;
        return option;
      }),
    );
    if (list.data.some((model) => model.id === previous)) select.value = previous;
    if (chat.modelsFailed) setChatStatus("");
    chat.modelsFailed = false;
  } catch (error) {
    chat.modelsFailed = true;
    setChatStatus(`Could not list the models: ${error.message}`, true);
  }
}

// ---- Route panel ----

function setText(id, value) {
  const text = value === null || value === undefined || value === "" ? "—" : String(value);
  const element = $(id);
  if (element.textContent !== text) element.textContent = text;
}

/** A serialized enum (`{"reason": "not_next", "position": 9, ...}`), in words. */
function words(value) {
  if (value === null || value === undefined) return null;
  if (typeof value === "string") return value.replaceAll("_", " ");
  return Object.entries(value)
    .map(([key, field]) => (key === "reason" ? words(field) : `${key.replaceAll("_", " ")} ${JSON.stringify(field)}`))
    .join(", ");
}

// The state's name is always shown as text; the tone only repeats it.
const TONES = { ready: "ok", fallback: "bad", hip: "neutral" };

function renderStatus(status) {
  const controller = status.controller;
  const state = controller ? controller.state : "no model loaded";
  setText("controller-state", state);
  $("controller-state").dataset.tone = TONES[state] || "warn";
  setText("fallback-reason", controller && controller.fallback_reason ? controller.fallback_reason : "none");
  let last = "none yet";
  if (controller && controller.last_eligible === true) last = "eligible";
  if (controller && controller.last_eligible === false) {
    last = `ineligible${controller.last_ineligible ? `: ${words(controller.last_ineligible)}` : ""}`;
  }
  setText("last-forward", last);
  setText("controller-transport", controller && controller.transport ? controller.transport : "none");
  renderForwards(status.observations || {});
  renderChart(status.history || []);
  renderIdentity(status);
  renderAdmission(status.admission);
  const device = status.device || {};
  const model = status.model;
  setText("device", `${device.kind} ${device.arch}`);
  setText("device-reason", device.reason);
  setText("model-id", model ? model.id : "none loaded");
  setText("model-sha", model && model.sha256);
  setText("model-path", model && model.path);
  setText("switches", status.switches);
  const running = status.generating;
  setText(
    "generating",
    running ? `${running.tokens} tokens, ${running.decode_tokens_per_second.toFixed(1)} tok/s` : "nothing",
  );
  const queue = status.queue || {};
  setText("queue-depth", `${queue.depth} of ${queue.capacity}`);
  const g = status.generations || {};
  setText("generations", `${g.finished} finished, ${g.cancelled} cancelled, ${g.failed} failed`);
  setText("summary", model ? `${model.id} on the ${device.kind} device (${device.arch}) · route ${state}` : "No model loaded");
  $("summary").dataset.loaded = "true";
}

function renderForwards(o) {
  setText("fwd-ordinary", o.ordinary);
  setText("fwd-recorded", o.recorded);
  setText("fwd-shadow", o.shadow);
  setText("fwd-fallbacks", o.fallbacks);
  const total = (o.retained || 0) + (o.ordinary || 0) + (o.recorded || 0);
  const share = total > 0 ? (o.retained || 0) / total : 0;
  $("share-bar").style.width = `${(share * 100).toFixed(1)}%`;
  setText("fwd-retained", total > 0 ? `${o.retained} (${Math.round(share * 100)}% of forwards)` : o.retained);
}

function renderIdentity(status) {
  const tape = status.tape;
  setText("tape-dispatches", tape ? tape.dispatch_count : "none captured");
  setText("tape-kernels", tape && tape.unique_kernels);
  setText("tape-external", tape && tape.external_launches);
  setText("tape-hash", tape && tape.sequence_hash);
  const s = status.submission;
  setText("sub-transport", s ? s.transport : "none prepared");
  setText("sub-dispatches", s && s.dispatches);
  setText("sub-packets", s && s.packets);
  setText("sub-queue", s && `id ${s.queue_id}, ${s.queues} in use`);
  setText("sub-phases", s && s.phases);
  setText("sub-dwords", s && s.pm4_dwords);
}

function renderAdmission(admission) {
  if (!admission) {
    setText("admitted", "no model loaded");
    setText("admission-reason", null);
    setText("admission-row", null);
    return;
  }
  setText("admitted", admission.admitted ? "yes" : "no");
  setText("admission-reason", admission.reason);
  const row = admission.row;
  setText(
    "admission-row",
    row ? `${row.fixture} (row ${row.index}: ${row.device_kind} ${row.arch}, ${row.transport}, up to ${row.max_context} positions)` : "none",
  );
}

function svg(name, attributes, parent) {
  const element = document.createElementNS(SVG_NS, name);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, String(value));
  if (parent) parent.append(element);
  return element;
}

/** A round upper bound for the chart's y axis. */
function ceiling(value) {
  const magnitude = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 2.5, 5, 10]) {
    if (step * magnitude >= value) return step * magnitude;
  }
  return 10 * magnitude;
}

/** A marker for one generation: its shape and fill say its route, its title says everything. */
function marker(entry, x, y, parent) {
  const route = entry.route;
  const attributes = { class: `point ${route}` };
  let shape;
  if (route === "retained") shape = svg("circle", { ...attributes, cx: x, cy: y, r: 3.6 }, parent);
  else if (route === "mixed") shape = svg("path", { ...attributes, d: `M${x} ${y - 4.2}L${x + 4.2} ${y + 3.2}H${x - 4.2}Z` }, parent);
  else shape = svg("rect", { ...attributes, x: x - 3.2, y: y - 3.2, width: 6.4, height: 6.4 }, parent);
  const title = svg("title", {}, shape);
  const when = new Date(entry.unix_ms).toLocaleTimeString();
  title.textContent = `${when}: ${entry.decode_tokens_per_second.toFixed(2)} tok/s, ${route} ` +
    `(${entry.retained_forwards} retained, ${entry.ordinary_forwards} ordinary forwards), ` +
    `${entry.prompt_tokens} prompt + ${entry.completion_tokens} completion tokens`;
}

function renderChart(history) {
  const chart = $("chart");
  const key = history.length === 0 ? "" : `${history.length}:${history[history.length - 1].unix_ms}`;
  if (chart.dataset.key === key && key !== "") return;
  chart.dataset.key = key;
  const title = $("chart-title");
  chart.replaceChildren(title);
  const { width, height, left, right, top, bottom } = CHART;
  const speeds = history.map((e) => (Number.isFinite(e.decode_tokens_per_second) ? e.decode_tokens_per_second : 0));
  const max = ceiling(Math.max(1, ...speeds));
  const plotWidth = width - left - right;
  const plotHeight = height - top - bottom;
  for (const fraction of [0, 0.5, 1]) {
    const y = top + plotHeight * (1 - fraction);
    svg("line", { class: "grid", x1: left, x2: width - right, y1: y, y2: y }, chart);
    const label = svg("text", { class: "axis-label", x: left - 5, y: y + 3, "text-anchor": "end" }, chart);
    label.textContent = String(Number((max * fraction).toPrecision(3)));
  }
  const caption = svg("text", { class: "axis-label", x: width - right, y: height - 5, "text-anchor": "end" }, chart);
  caption.textContent = history.length ? `${generations(history.length, "last")}, tok/s` : "tok/s";
  // The newest point is at the right edge; at least `slots` places so that a few points do not
  // spread over the whole width.
  const slots = Math.max(CHART.slots, history.length);
  const step = plotWidth / (slots - 1);
  const points = speeds.map((speed, i) => [
    left + plotWidth - (speeds.length - 1 - i) * step,
    top + plotHeight * (1 - speed / max),
  ]);
  if (points.length > 1) {
    svg("polyline", { class: "trend", points: points.map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`).join(" ") }, chart);
  }
  history.forEach((entry, i) => marker(entry, points[i][0], points[i][1], chart));
  summarize(history, speeds);
}

/** "last 3 generations", "last generation". */
function generations(count, lead) {
  return count === 1 ? `${lead} generation` : `${lead} ${count} generations`;
}

function summarize(history, speeds) {
  if (history.length === 0) {
    setText("speed-summary", "No finished generation yet.");
    return;
  }
  const last = history[history.length - 1];
  const byRoute = (route) => history.filter((e) => e.route === route).length;
  setText(
    "speed-summary",
    `Latest ${speeds[speeds.length - 1].toFixed(2)} tok/s (${last.route}); peak ${Math.max(...speeds).toFixed(2)} tok/s ` +
      `${generations(history.length, "over the last")}. Routes: ${byRoute("retained")} retained, ` +
      `${byRoute("mixed")} mixed, ${byRoute("ordinary")} ordinary.`,
  );
}

function setConnection(text, down) {
  const element = $("connection");
  element.textContent = text;
  element.classList.toggle("down", down);
}

async function poll() {
  clearTimeout(poller.timer);
  if (poller.inFlight || document.hidden) return;
  poller.inFlight = true;
  try {
    const status = await (await api("/redline/status")).json();
    renderStatus(status);
    setConnection(`live, ${new Date().toLocaleTimeString()}`, false);
  } catch (error) {
    setConnection(error.status === 401 ? "waiting for an API key" : `not updating: ${error.message}`, true);
  } finally {
    poller.inFlight = false;
    poller.timer = setTimeout(poll, chat.abort ? POLL_BUSY_MS : POLL_IDLE_MS);
  }
}

// ---- Start ----

function start() {
  $("composer").addEventListener("submit", (event) => {
    event.preventDefault();
    send();
  });
  $("message").addEventListener("keydown", onMessageKey);
  $("stop").addEventListener("click", stop);
  $("clear").addEventListener("click", clearConversation);
  $("key-form").addEventListener("submit", useKey);
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden) poll();
  });
  setBusy(false);
  renderChart([]);
  loadModels();
  poll();
}

start();
