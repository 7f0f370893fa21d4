// Slack's mrkdwn, the basics: *bold*, _italic_, ~strike~, `code`, ```blocks```, > quotes,
// <url|text>, <@U…>, <#C…|name>, <!here>. Returns HTML with everything else escaped.
"use strict";

const Mrkdwn = (() => {
  const escape = (s) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;");
  // Slack escapes &, < and > in text: undo that before escaping for HTML ourselves.
  const unescape = (s) => s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");

  function link(inner, users) {
    const [target, label] = inner.split("|", 2);
    if (target.startsWith("@")) {
      const user = users[target.slice(1)];
      return `<span class="mention">@${escape(user ? user.name : (label || target.slice(1)))}</span>`;
    }
    if (target.startsWith("#")) {
      return `<span class="mention">#${escape(label || target.slice(1))}</span>`;
    }
    if (target.startsWith("!")) {
      return `<span class="mention">@${escape(target.slice(1).split("^")[0])}</span>`;
    }
    if (/^(https?:|mailto:)/.test(target)) {
      return `<a href="${escape(target)}" target="_blank" rel="noopener">${escape(label || target)}</a>`;
    }
    return escape(`<${inner}>`);
  }

  function inline(text, users) {
    const parts = [];
    const token = /<([^<>]+)>|`([^`\n]+)`/g;
    let last = 0;
    let match;
    while ((match = token.exec(text)) !== null) {
      parts.push(style(escape(text.slice(last, match.index))));
      parts.push(match[1] !== undefined ? link(match[1], users)
        : `<code>${escape(match[2])}</code>`);
      last = token.lastIndex;
    }
    parts.push(style(escape(text.slice(last))));
    return parts.join("");
  }

  function style(html) {
    return html
      .replace(/(^|[\s(])\*([^*\n]+)\*(?=$|[\s).,!?:;])/g, "$1<b>$2</b>")
      .replace(/(^|[\s(])_([^_\n]+)_(?=$|[\s).,!?:;])/g, "$1<i>$2</i>")
      .replace(/(^|[\s(])~([^~\n]+)~(?=$|[\s).,!?:;])/g, "$1<s>$2</s>");
  }

  function render(source, users) {
    const text = unescape(source || "");
    const out = [];
    const fence = /```([\s\S]*?)```/g;
    let last = 0;
    let match;
    const lines = (chunk) => chunk.split("\n").map((line) => line.startsWith(">")
      ? `<blockquote>${inline(line.replace(/^>\s?/, ""), users)}</blockquote>`
      : inline(line, users)).join("<br>");
    while ((match = fence.exec(text)) !== null) {
      out.push(lines(text.slice(last, match.index)));
      out.push(`<pre>${escape(match[1].replace(/^\n/, ""))}</pre>`);
      last = fence.lastIndex;
    }
    out.push(lines(text.slice(last)));
    return out.join("");
  }

  return { render, escape };
})();
