// Slack's mrkdwn, the basics: *bold*, _italic_, ~strike~, `code`, ```blocks```, > quotes,
// <url|text>, <@U…>, <#C…|name>, <!here>, <!subteam^S…> and the :emoji: codes Stratus uses.
// Returns HTML with everything else escaped.
//
// Markup is found in the text as sent: an app that escapes untrusted text (&lt;!channel&gt;)
// shows it literally, as Slack does; only then are &amp;, &lt; and &gt; turned back into the
// characters they stand for (and escaped again for HTML).
"use strict";

const Mrkdwn = (() => {
  const escape = (s) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;");
  // Slack escapes &, < and > in text: undo that (after finding the markup) before escaping
  // for HTML ourselves.
  const unescape = (s) => s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
  const text = (s) => escape(unescape(s));
  const EMOJI = {
    arrow_forward: "▶️", ballot_box_with_check: "☑️", boom: "💥", chart_with_downwards_trend: "📉",
    gear: "⚙️", hammer_and_wrench: "🛠️", heavy_minus_sign: "➖", hourglass: "⌛",
    hourglass_flowing_sand: "⏳", large_green_circle: "🟢", large_yellow_circle: "🟡",
    leftwards_arrow_with_hook: "↩️", mag: "🔍", memo: "📝", no_entry: "⛔", no_entry_sign: "🚫",
    octagonal_sign: "🛑", raised_hand: "✋", recycle: "♻️", red_circle: "🔴", rotating_light: "🚨",
    stethoscope: "🩺", thinking_face: "🤔", warning: "⚠️", white_check_mark: "✅", x: "❌",
    bell: "🔔", fire: "🔥", bar_chart: "📊",
  };
  const emoji = (html) => html.replace(/:([a-z0-9_+-]+):/g, (all, name) => EMOJI[name] || all);

  function link(inner, users, groups) {
    const [target, rawLabel] = inner.split("|", 2);
    const label = rawLabel === undefined ? undefined : unescape(rawLabel);
    if (target.startsWith("@")) {
      const user = users[target.slice(1)];
      return `<span class="mention">@${escape(user ? user.name : (label || target.slice(1)))}</span>`;
    }
    if (target.startsWith("#")) {
      return `<span class="mention">#${escape(label || target.slice(1))}</span>`;
    }
    if (target.startsWith("!subteam^")) {
      const group = groups[target.slice("!subteam^".length)];
      return `<span class="mention">@${escape(group ? group.handle : (label || "group"))}</span>`;
    }
    if (target.startsWith("!")) {
      return `<span class="mention">@${escape(target.slice(1).split("^")[0])}</span>`;
    }
    if (/^(https?:|mailto:)/.test(target)) {
      const href = unescape(target);
      return `<a href="${escape(href)}" target="_blank" rel="noopener">${escape(label || href)}</a>`;
    }
    return text(`<${inner}>`);
  }

  // Links, mentions and code spans are set aside first (their text is never formatted), the
  // line is formatted whole — so marks around a code span format it, as on Slack — and then
  // they are put back.
  const HELD = /\u0000(\d+)\u0000/g;

  function inline(source, users, groups) {
    const held = [];
    const token = /<([^<>]+)>|`([^`\n]+)`/g;
    const marked = source.replace(/\u0000/g, "").replace(token, (all, inner, code) => {
      held.push(inner !== undefined ? link(inner, users, groups) : `<code>${text(code)}</code>`);
      return `\u0000${held.length - 1}\u0000`;
    });
    return emoji(style(text(marked))).replace(HELD, (all, index) => held[Number(index)]);
  }

  // A mark opens after a boundary and closes before one; the same character inside a word
  // (STRATUS_PROMETHEUS_URL, 2*3) neither opens nor closes it.
  const mark = (char) => new RegExp(
    `(^|[\\s(\u0000])\\${char}((?:[^${char}\\n]|\\${char}(?=[\\w]))+?)\\${char}`
      + `(?=$|[\\s).,!?:;\u0000])`, "g");
  const MARKS = [mark("*"), mark("_"), mark("~")];

  // Text that starts or ends with a space is not formatted ("2 * 3 * 4" stays as it is).
  const tag = (name) => (all, before, inner) => (/^\s|\s$/.test(inner) ? all
    : `${before}<${name}>${inner}</${name}>`);

  function style(html) {
    return html
      .replace(MARKS[0], tag("b"))
      .replace(MARKS[1], tag("i"))
      .replace(MARKS[2], tag("s"));
  }

  function render(raw, users, groups) {
    const source = raw || "";
    const known = groups || {};
    const out = [];
    const fence = /```([\s\S]*?)```/g;
    let last = 0;
    let match;
    const lines = (chunk) => chunk.split("\n").map((line) => /^(>|&gt;)/.test(line)
      ? `<blockquote>${inline(line.replace(/^(>|&gt;)\s?/, ""), users, known)}</blockquote>`
      : inline(line, users, known)).join("<br>");
    while ((match = fence.exec(source)) !== null) {
      out.push(lines(source.slice(last, match.index)));
      out.push(`<pre>${text(match[1].replace(/^\n/, ""))}</pre>`);
      last = fence.lastIndex;
    }
    out.push(lines(source.slice(last)));
    return out.join("");
  }

  return { render, escape };
})();
