// The playground page: renders the workspace from /playground/v1/state (long-polled) and
// sends what a person does through the same control API the tests use.
"use strict";

const API = "/playground/v1";
const params = new URLSearchParams(location.search);
const ui = {
  user: localStorage.getItem("playground-user") || "",
  channel: params.get("channel") || "C0INCIDENT",
  thread: params.get("ts") || null,
  home: false,
  state: null,
  shownErrors: new Set(),
};
const $ = (id) => document.getElementById(id);
const el = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key === "html") node.innerHTML = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (value !== undefined && value !== null) node.setAttribute(key, value);
  }
  for (const child of children) node.append(child);
  return node;
};

async function call(method, path, body) {
  const response = await fetch(API + path, {
    method,
    headers: { "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await response.json();
  if (!response.ok) toast(`Playground: ${data.error}`);
  return data;
}

function toast(text) {
  const node = el("div", { class: "toast", role: "alert" }, text);
  $("toasts").append(node);
  setTimeout(() => node.remove(), 6000);
}

function users() {
  const map = {};
  for (const u of ui.state.config.users) map[u.id] = u;
  map[ui.state.config.bot_user_id] = { id: ui.state.config.bot_user_id, name: "stratus" };
  return map;
}
function groups() {
  const map = {};
  for (const g of ui.state.config.usergroups || []) map[g.id] = g;
  return map;
}
const md = (text) => Mrkdwn.render(text, users(), groups());
const plain = (obj) => Mrkdwn.escape((obj && obj.text) || "");
const textHtml = (obj) => (obj && obj.type === "mrkdwn" ? md(obj.text) : plain(obj));

// -- Block Kit -------------------------------------------------------------------------

function confirmThen(confirm, go) {
  if (!confirm) return go();
  const dialog = el("div", { class: "dialog confirm", role: "dialog", "aria-label": "Confirm" },
    el("h3", { html: plain(confirm.title) }),
    el("div", { html: textHtml(confirm.text) }),
    el("div", { class: "buttons" },
      el("button", { type: "button", class: "deny", onclick: () => close() },
        (confirm.deny && confirm.deny.text) || "Cancel"),
      el("button", {
        type: "button", class: `confirm-yes ${confirm.style || "primary"}`,
        onclick: () => { close(); go(); },
      }, (confirm.confirm && confirm.confirm.text) || "Yes")));
  const overlay = el("div", { class: "overlay-confirm" }, dialog);
  const close = () => overlay.remove();
  document.body.append(overlay);
}

function act(where, element, blockId, selected) {
  const body = { user: ui.user, action_id: element.action_id, block_id: blockId };
  if (where.view_id) body.view_id = where.view_id;
  else Object.assign(body, { channel: where.channel, ts: where.ts, ephemeral: where.ephemeral });
  if (element.type === "button" && element.value !== undefined) body.value = element.value;
  if (selected !== undefined) body.selected = selected;
  confirmThen(element.confirm, () => call("POST", "/actions", body).then(reportDelivery));
}

function options(element) {
  const all = [...(element.options || [])];
  for (const group of element.option_groups || []) all.push(...group.options);
  return all;
}

function renderElement(element, blockId, where) {
  if (element.type === "button") {
    const button = el("button", {
      type: "button", class: `bk-button ${element.style || ""}`,
      "data-action-id": element.action_id, "data-value": element.value,
      onclick: () => (element.url ? window.open(element.url) : act(where, element, blockId)),
    }, (element.text && element.text.text) || "");
    return button;
  }
  if (element.type === "static_select" || element.type === "overflow") {
    const label = element.type === "overflow" ? "⋯"
      : ((element.placeholder && element.placeholder.text) || "Select");
    const select = el("select", {
      class: `bk-${element.type}`, "data-action-id": element.action_id, "aria-label": label,
      onchange: (e) => { if (e.target.value) act(where, element, blockId, e.target.value); },
    }, el("option", { value: "" }, label));
    for (const option of options(element)) {
      select.append(el("option", { value: option.value }, option.text.text));
    }
    return select;
  }
  if (element.type === "image") {
    return el("img", { src: element.image_url, alt: element.alt_text || "", class: "bk-image" });
  }
  return el("span", { class: "bk-unsupported" }, `[${element.type}]`);
}

function inputElement(block, view) {
  const element = block.element;
  const value = ((view.state.values[block.block_id] || {})[element.action_id]) || {};
  const name = `${block.block_id}.${element.action_id}`;
  if (element.type === "plain_text_input") {
    const tag = element.multiline ? "textarea" : "input";
    return el(tag, { name, "data-action-id": element.action_id, value: value.value || "" });
  }
  if (["static_select", "radio_buttons", "checkboxes", "multi_static_select"]
    .includes(element.type)) {
    const multi = element.type === "checkboxes" || element.type === "multi_static_select";
    const select = el("select", { name, "data-action-id": element.action_id,
      multiple: multi ? "multiple" : null });
    if (!multi) select.append(el("option", { value: "" }, "Select an option"));
    for (const option of options(element)) {
      select.append(el("option", { value: option.value }, option.text.text));
    }
    return select;
  }
  return el("input", { name, "data-action-id": element.action_id, placeholder: element.type });
}

function renderBlocks(blocks, where, view) {
  const box = el("div", { class: "blocks" });
  for (const block of blocks || []) {
    const node = el("div", { class: `bk bk-${block.type}`, "data-block-id": block.block_id });
    if (block.type === "header") node.append(el("h4", { html: plain(block.text) }));
    else if (block.type === "divider") node.append(el("hr"));
    else if (block.type === "section") {
      const body = el("div", { class: "bk-section-body" });
      if (block.text) body.append(el("div", { class: "bk-text", html: textHtml(block.text) }));
      if (block.fields) {
        const fields = el("div", { class: "bk-fields" });
        for (const f of block.fields) fields.append(el("div", { html: textHtml(f) }));
        body.append(fields);
      }
      node.append(body);
      if (block.accessory) node.append(renderElement(block.accessory, block.block_id, where));
    } else if (block.type === "context") {
      for (const item of block.elements) {
        node.append(item.type === "image" ? renderElement(item, block.block_id, where)
          : el("span", { html: textHtml(item) }));
      }
    } else if (block.type === "actions") {
      for (const element of block.elements) {
        node.append(renderElement(element, block.block_id, where));
      }
    } else if (block.type === "input" && view) {
      node.append(el("label", {}, block.label.text), inputElement(block, view));
      if (block.hint) node.append(el("small", {}, block.hint.text));
      const error = view.errors && view.errors[block.block_id];
      if (error) node.append(el("div", { class: "field-error", role: "alert" }, error));
    } else if (block.type === "image") {
      node.append(el("img", { src: imageSource(block), alt: block.alt_text || "", class: "bk-image" }));
      if (block.title) node.append(el("div", { class: "bk-image-title" }, block.title.text));
    } else if (block.type === "rich_text") {
      continue;
    } else node.append(el("span", { class: "bk-unsupported" }, `[${block.type}]`));
    box.append(node);
  }
  return box;
}

// -- Messages ---------------------------------------------------------------------------

// An image block shows a public URL, or a file uploaded to the workspace (slack_file).
function imageSource(block) {
  if (block.image_url) return block.image_url;
  const ref = block.slack_file || {};
  if (ref.id) return `${API}/files/${encodeURIComponent(ref.id)}`;
  return ref.url || "";
}

// Files a message carries (files.completeUploadExternal): images inline, others as a link
// with the start of a text file shown, as Slack previews it.
function renderFiles(files) {
  const box = el("div", { class: "files" });
  for (const file of files) {
    const src = `${API}/files/${encodeURIComponent(file.id)}`;
    const item = el("div", { class: "file", "data-file-id": file.id });
    if ((file.mimetype || "").startsWith("image/")) {
      item.append(el("img", { src, alt: file.alt_txt || file.title || "", class: "file-image" }));
      item.append(el("div", { class: "file-title" }, file.title || file.name));
    } else {
      item.append(el("a", { href: src, target: "_blank", class: "file-link" },
        `📄 ${file.title || file.name}`));
      if (file.preview) item.append(el("pre", { class: "file-preview" }, file.preview));
    }
    box.append(item);
  }
  return box;
}

function renderMessage(message, options) {
  const who = users()[message.user] || { name: message.user };
  const when = new Date(parseFloat(message.ts) * 1000).toLocaleTimeString();
  const node = el("div", {
    class: `message${options.ephemeral ? " ephemeral" : ""}${message.bot_id ? " from-bot" : ""}`,
    "data-ts": message.ts,
  }, el("div", { class: "meta" }, el("b", {}, who.real_name || who.name),
    message.bot_id ? el("span", { class: "app-badge" }, "APP") : "",
    el("span", { class: "time" }, when),
    message.edited ? el("span", { class: "edited" }, "(edited)") : ""));
  const hasBlocks = message.blocks && message.blocks.some((b) => b.type !== "rich_text");
  if (hasBlocks) {
    node.append(renderBlocks(message.blocks, {
      channel: options.channel, ts: message.ts, ephemeral: !!options.ephemeral,
    }));
  } else if (message.text || !message.files) {
    node.append(el("div", { class: "text", html: md(message.text) }));
  }
  if (message.files && message.files.length) node.append(renderFiles(message.files));
  if (options.ephemeral) node.append(el("div", { class: "only-you" }, "Only visible to you"));
  if (message.reactions) {
    node.append(el("div", { class: "reactions" },
      ...message.reactions.map((r) => el("span", { class: "reaction" }, `:${r.name}: ${r.count}`))));
  }
  if (options.showReplies && message.reply_count) {
    node.append(el("a", {
      href: "#", class: "replies",
      onclick: (e) => { e.preventDefault(); ui.thread = message.ts; render(); },
    }, `${message.reply_count} ${message.reply_count === 1 ? "reply" : "replies"}`));
  }
  return node;
}

function render() {
  const state = ui.state;
  if (!state) return;
  const cfg = state.config;
  $("workspace").textContent = `${cfg.team_domain} (${cfg.team_id})`;
  $("app-status").textContent = cfg.socket_mode_connected ? "app: Socket Mode"
    : (cfg.request_url ? `app: ${cfg.request_url}` : "app: not connected");
  const switcher = $("user-switcher");
  if (switcher.options.length !== cfg.users.length) {
    switcher.replaceChildren(...cfg.users.map((u) =>
      el("option", { value: u.id }, `${u.real_name} (@${u.name})`)));
  }
  if (!cfg.users.some((u) => u.id === ui.user)) ui.user = cfg.users[0].id;
  switcher.value = ui.user;
  $("channels").replaceChildren(...cfg.channels.filter((c) => !c.is_im).map((c) =>
    el("li", {}, el("a", {
      href: "#", class: c.id === ui.channel && !ui.home ? "active" : "",
      onclick: (e) => { e.preventDefault(); ui.home = false; ui.channel = c.id; ui.thread = null; render(); },
    }, `# ${c.name}`))));
  $("groups").replaceChildren(...cfg.usergroups.map((g) =>
    el("li", { title: g.users.map((u) => users()[u].name).join(", ") }, `@${g.handle}`)));

  renderLabMenu(cfg.scenarios || []);

  $("channel").hidden = ui.home;
  $("home").hidden = !ui.home;
  const channel = cfg.channels.find((c) => c.id === ui.channel) || cfg.channels[0];
  ui.channel = channel.id;
  $("channel-name").textContent = `# ${channel.name}`;
  const inChannel = state.messages.filter((m) => m.channel === ui.channel);
  const ephemerals = state.ephemerals.filter((e) => e.channel === ui.channel);
  const top = inChannel.filter((m) => !m.thread_ts || m.thread_ts === m.ts
    || m.subtype === "thread_broadcast").map((m) => ({ m, eph: false }));
  for (const e of ephemerals) if (!e.message.thread_ts) top.push({ m: e.message, eph: true });
  top.sort((a, b) => parseFloat(a.m.ts) - parseFloat(b.m.ts));
  const list = $("messages");
  const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
  list.replaceChildren(...top.map(({ m, eph }) => renderMessage(m, {
    channel: ui.channel, ephemeral: eph, showReplies: true,
  })));
  if (atBottom) list.scrollTop = list.scrollHeight;

  $("thread").hidden = !ui.thread || ui.home;
  if (ui.thread) {
    const thread = inChannel.filter((m) => m.ts === ui.thread || m.thread_ts === ui.thread)
      .map((m) => ({ m, eph: false }));
    for (const e of ephemerals) if (e.message.thread_ts === ui.thread) thread.push({ m: e.message, eph: true });
    thread.sort((a, b) => parseFloat(a.m.ts) - parseFloat(b.m.ts));
    $("thread-messages").replaceChildren(...thread.map(({ m, eph }) => renderMessage(m, {
      channel: ui.channel, ephemeral: eph,
    })));
  }
  $("home-view").replaceChildren(state.home
    ? renderBlocks(state.home.blocks, { view_id: state.home.id })
    : el("p", {}, "The app has not published a Home tab for you yet."));
  renderModal(state.modal);
  for (const d of state.deliveries) {
    if (!d.ok && d.error && d.user === ui.user && !ui.shownErrors.has(d.id)) {
      ui.shownErrors.add(d.id);
    }
  }
}

// The "inject a fault" menu, when the playground runs next to a lab (stratus demo).
function renderLabMenu(scenarios) {
  $("lab-menu").hidden = scenarios.length === 0;
  const select = $("fault-select");
  if (select.options.length === scenarios.length) return;
  select.replaceChildren(...scenarios.map((s) =>
    el("option", { value: s.name, title: s.description }, s.name)));
  describeFault();
}

function describeFault() {
  const chosen = (ui.state.config.scenarios || []).find((s) => s.name === $("fault-select").value);
  $("fault-description").textContent = chosen ? chosen.description : "";
}

async function injectFault() {
  const name = $("fault-select").value;
  if (!name) return;
  const button = $("inject-fault");
  button.disabled = true;
  try {
    const result = await call("POST", `/scenarios/${encodeURIComponent(name)}/inject`);
    if (result.ok) {
      toast(`Injected ${name} in namespace ${result.namespace}. ` +
        `Now ask: /stratus investigate ${result.namespace}`);
      const input = $("composer-input");
      if (!input.value) input.value = `/stratus investigate ${result.namespace}`;
    } else if (result.detail) toast(`Injecting ${name} failed: ${result.detail}`);
  } finally {
    button.disabled = false;
  }
}

function renderModal(view) {
  const overlay = $("overlay");
  if (!view) { overlay.hidden = true; overlay.replaceChildren(); overlay.dataset.view = ""; return; }
  if (overlay.dataset.view === `${view.id}:${view.hash}:${JSON.stringify(view.errors || {})}`) return;
  overlay.dataset.view = `${view.id}:${view.hash}:${JSON.stringify(view.errors || {})}`;
  const form = el("form", { class: "dialog modal", role: "dialog", "aria-label": plain(view.title) },
    el("h3", { html: plain(view.title) }),
    renderBlocks(view.blocks, { view_id: view.id }, view),
    el("div", { class: "buttons" },
      el("button", { type: "button", class: "deny", onclick: () => call("POST", `/views/${view.id}/close`) },
        (view.close && view.close.text) || "Cancel"),
      view.submit ? el("button", { type: "submit", class: "primary" }, view.submit.text) : ""));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const values = {};
    for (const field of form.querySelectorAll("[name]")) {
      values[field.name] = field.multiple
        ? [...field.selectedOptions].map((o) => o.value) : field.value;
    }
    reportDelivery(await call("POST", `/views/${view.id}/submit`, { user: ui.user, values }));
  });
  overlay.replaceChildren(form);
  overlay.hidden = false;
}

function reportDelivery(result) {
  if (result && result.ok === false && result.error && result.error !== "required_fields") {
    const what = result.label || "request";
    toast(`${what} failed with the error "${result.error}"`);
  }
}

// -- What a person does -----------------------------------------------------------------

async function send(text, threadTs) {
  if (!text.trim()) return;
  if (text.startsWith("/") && !threadTs) {
    const [command, ...rest] = text.split(" ");
    reportDelivery(await call("POST", "/commands", {
      user: ui.user, channel: ui.channel, command, text: rest.join(" "),
    }));
  } else {
    await call("POST", "/messages", {
      user: ui.user, channel: ui.channel, text, thread_ts: threadTs || undefined,
    });
  }
}

$("composer").addEventListener("submit", (e) => {
  e.preventDefault();
  const input = $("composer-input");
  send(input.value, null);
  input.value = "";
});
$("thread-composer").addEventListener("submit", (e) => {
  e.preventDefault();
  const input = $("thread-input");
  send(input.value, ui.thread);
  input.value = "";
});
$("fault-select").addEventListener("change", describeFault);
$("inject-fault").addEventListener("click", injectFault);
$("close-thread").addEventListener("click", () => { ui.thread = null; render(); });
$("user-switcher").addEventListener("change", (e) => {
  ui.user = e.target.value;
  localStorage.setItem("playground-user", ui.user);
  refresh(-1);
});
$("open-home").addEventListener("click", (e) => {
  e.preventDefault();
  ui.home = true;
  render();
  call("POST", "/home", { user: ui.user });
});

let polling = 0;
async function refresh(after) {
  const mine = ++polling;
  try {
    const response = await fetch(`${API}/state?user=${encodeURIComponent(ui.user)}&after=${after}&wait=${after < 0 ? 0 : 20}`);
    const state = await response.json();
    if (mine !== polling) return;
    ui.state = state;
    render();
    refresh(state.version);
  } catch (error) {
    if (mine === polling) setTimeout(() => refresh(-1), 1000);
  }
}
refresh(-1);
