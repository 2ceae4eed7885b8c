// render.js: one entry to DOM nodes. Every text of the session goes in
// through textContent or a property (never innerHTML), so no text of a
// session can become markup.

var FOLD_CHARS = 1200, FOLD_LINES = 20, PREVIEW_LINES = 8;

var JSON_DEPTH = 64;

// str gives any value of the session as text without calling anything
// of it: a string as it is, a number or a boolean as written, null or
// undefined as "", anything else as its JSON. (String() and + call an
// object's toString, which the data may have set to anything.)
function str(v) {
  switch (typeof v) {
    case "string": return v;
    case "number": case "boolean": case "bigint": return String(v);
    case "undefined": return "";
  }
  return v === null ? "" : toJSON(v, false);
}

// num gives a value of the session as a number: a number or the text of
// one, else NaN.
function num(v) {
  return typeof v === "number" ? v : typeof v === "string" ? Number(v) : NaN;
}

// toJSON writes v as JSON (indented when indent), cut at a depth when it
// is nested too deep to write whole.
function toJSON(v, indent) {
  try {
    var s = JSON.stringify(v, null, indent ? 2 : undefined);
    return s === undefined ? str(v === undefined ? "" : typeof v) : s;
  } catch (err) {
    try { return JSON.stringify(cutDepth(v, JSON_DEPTH), null, indent ? 2 : undefined); } catch (err2) { return "[value that cannot be written]"; }
  }
}

// cutDepth copies v down to depth levels, what is deeper as "\u2026".
function cutDepth(v, depth) {
  if (!v || typeof v !== "object") return v;
  if (depth <= 0) return "\u2026";
  var out = Array.isArray(v) ? [] : {}, keys = Object.keys(v);
  for (var k = 0; k < keys.length; k++) {
    var c = cutDepth(v[keys[k]], depth - 1);
    if (Array.isArray(out)) out.push(c); else Object.defineProperty(out, keys[k], { value: c, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

function el(tag, cls, text) {
  var n = document.createElement(tag);
  if (cls) n.className = cls;
  if (text !== undefined && text !== null) n.textContent = str(text);
  return n;
}

function fmtInt(n) {
  n = num(n);
  return (isFinite(n) ? n : 0).toLocaleString("en-US");
}

// plural writes a count with its noun: "1 entry", "2 entries".
function plural(n, one, many) {
  n = num(n);
  return fmtInt(n) + " " + (n === 1 ? one : many);
}

// fmtCost writes a cost in dollars, or "" when none is known: a cost of
// 0 is what an agent records when it knows no prices, so it shows
// nothing rather than "$0.0000".
function fmtCost(c) {
  c = num(c);
  if (!isFinite(c) || c <= 0) return "";
  return "$" + (c >= 1 ? c.toFixed(2) : c >= 0.01 ? c.toFixed(3) : c.toFixed(4));
}

// fmtTime shows an ISO timestamp or Unix milliseconds as UTC, the same
// on every machine.
function fmtTime(ts) {
  if (ts === undefined || ts === null || ts === "") return "";
  if (typeof ts !== "number" && typeof ts !== "string") return str(ts);
  var d = new Date(ts);
  if (isNaN(d.getTime())) return str(ts);
  return d.toISOString().slice(0, 19).replace("T", " ") + " UTC";
}

function imageSrc(block, blobs) {
  var mime = str(block.mimeType);
  var data = typeof block.data === "string" ? block.data : "";
  if (data.indexOf("blob:sha256:") === 0) data = blobs && Object.prototype.hasOwnProperty.call(blobs, data) && typeof blobs[data] === "string" ? blobs[data] : "";
  if (!data || !/^image\/[a-z0-9.+-]+$/i.test(mime) || !/^[A-Za-z0-9+/=\s]+$/.test(data)) return "";
  return "data:" + mime + ";base64," + data.replace(/\s+/g, "");
}

function Renderer(tree, actions) {
  this.tree = tree;
  this.blobs = tree.env.blobs || null;
  this.actions = actions;
}

// foldable shows long text folded to its first lines, with a toggle.
Renderer.prototype.foldable = function (text, cls) {
  text = str(text);
  var lines = text.split("\n");
  var pre = el("pre", cls);
  if (text.length <= FOLD_CHARS && lines.length <= FOLD_LINES) { pre.textContent = text; return pre; }
  var box = el("div", "fold");
  var preview = lines.slice(0, PREVIEW_LINES).join("\n");
  if (preview.length > FOLD_CHARS) preview = preview.slice(0, FOLD_CHARS);
  pre.textContent = preview + "\n\u2026";
  var more = lines.length > 1 ? plural(lines.length, "line", "lines") : plural(text.length, "character", "characters");
  var btn = el("button", "fold-toggle", "Show all " + more);
  btn.type = "button";
  btn.setAttribute("aria-expanded", "false");
  btn.addEventListener("click", function () {
    var open = btn.getAttribute("aria-expanded") !== "true";
    pre.textContent = open ? text : preview + "\n\u2026";
    btn.textContent = open ? "Collapse" : "Show all " + more;
    btn.setAttribute("aria-expanded", String(open));
    box.classList.toggle("open", open);
  });
  box.append(pre, btn);
  return box;
};

// text renders prose, with ``` fences as code blocks.
Renderer.prototype.text = function (s) {
  var box = el("div", "text");
  var parts = str(s).split(/^```[^\n]*\n?/m);
  for (var k = 0; k < parts.length; k++) {
    if (!parts[k]) continue;
    if (k % 2 === 1) box.append(this.foldable(parts[k].replace(/\n$/, ""), "code"));
    else box.append(el("p", null, parts[k].replace(/^\n+|\n+$/g, "")));
  }
  return box;
};

Renderer.prototype.block = function (b) {
  if (!b || typeof b !== "object") return el("pre", "raw", toJSON(b, false));
  switch (b.type) {
    case "text":
      return this.text(b.text || "");
    case "thinking": {
      var d = el("details", "thinking");
      d.append(el("summary", null, b.redacted ? "Thinking (redacted)" : "Thinking"));
      if (!b.redacted) d.append(this.text(b.thinking || ""));
      return d;
    }
    case "toolCall": {
      var known = this.toolCall(b);
      if (known) return known;
      var call = el("div", "tool-call");
      var head = el("div", "tool-head");
      head.append(el("span", "tool-icon", "\u2699"), el("span", "tool-name", b.name || "tool"));
      if (b.id) head.append(el("span", "muted", b.id));
      var args = b.arguments;
      var argText = typeof args === "string" ? args : toJSON(args === undefined ? {} : args, true);
      call.append(head, this.foldable(argText, "args"));
      return call;
    }
    case "image": {
      var src = imageSrc(b, this.blobs);
      if (!src) return el("div", "note", "[image " + str(b.mimeType) + " not included in this export]");
      var img = el("img", "image");
      img.alt = "image (" + str(b.mimeType) + ")";
      img.loading = "lazy";
      img.src = src;
      return img;
    }
  }
  return this.foldable(toJSON(b, true), "raw");
};

Renderer.prototype.content = function (body, content) {
  if (typeof content === "string") { body.append(this.text(content)); return; }
  if (!Array.isArray(content)) return;
  for (var k = 0; k < content.length; k++) body.append(this.block(content[k]));
};

Renderer.prototype.usage = function (m) {
  var u = m.usage;
  if (!u || typeof u !== "object") return null;
  var parts = ["in " + fmtInt(u.input), "out " + fmtInt(u.output)];
  if (u.cacheRead) parts.push("cache read " + fmtInt(u.cacheRead));
  if (u.cacheWrite) parts.push("cache write " + fmtInt(u.cacheWrite));
  if (u.totalTokens) parts.push("total " + fmtInt(u.totalTokens));
  var line = el("div", "usage", parts.join(" \u00b7 "));
  var cost = u.cost && typeof u.cost === "object" ? fmtCost(u.cost.total) : "";
  if (cost) line.append(el("span", "cost", cost));
  return line;
};

var ROLE_NAMES = new Map([["user", "User"], ["assistant", "Assistant"], ["toolResult", "Tool result"], ["bashExecution", "Shell"], ["custom", "Extension"]]);

Renderer.prototype.card = function (i, kind, role, extra) {
  var e = this.tree.entries[i];
  var art = el("article", "entry " + kind);
  art.dataset.pos = String(i);
  var head = el("div", "entry-head");
  head.append(el("span", "role", role));
  if (extra) head.append(el("span", "muted", extra));
  var label = this.tree.labels.get(i);
  if (label !== undefined) head.append(el("span", "badge label", "\u2691 " + label));
  head.append(el("span", "spacer"), el("time", null, fmtTime(e.timestamp)));
  art.append(head);
  return art;
};

Renderer.prototype.message = function (i, m) {
  var role = typeof m.role === "string" && m.role ? m.role : m.role ? str(m.role) : "message";
  var art, body = el("div", "entry-body");
  if (role === "assistant") {
    art = this.card(i, "role-assistant", "Assistant", m.model ? m.model : "");
    this.content(body, m.content);
    if (m.stopReason === "error" || m.stopReason === "aborted" || m.errorMessage) body.append(el("div", "error", (str(m.stopReason) || "error") + (m.errorMessage ? ": " + str(m.errorMessage) : "")));
    art.append(body);
    var u = this.usage(m);
    if (u) art.append(u);
    return art;
  }
  if (role === "toolResult") {
    var call = this.tree.callOf(i);
    if (call && toolView(call)) {
      // Its output is shown with its call, in the message above.
      art = this.card(i, "role-tool shown-above" + (m.isError ? " is-error" : ""), m.isError ? "Tool error" : "Tool result", (str(m.toolName) || str(call.name)) + " \u00b7 shown with its call");
      if (Array.isArray(m.content)) for (var c = 0; c < m.content.length; c++) if (m.content[c] && m.content[c].type === "image") body.append(this.block(m.content[c]));
      if (body.childNodes.length) art.append(body);
      return art;
    }
    art = this.card(i, "role-tool" + (m.isError ? " is-error" : ""), m.isError ? "Tool error" : "Tool result", m.toolName || "");
    var text = textOf(m.content);
    if (text) body.append(this.foldable(text, "output"));
    if (Array.isArray(m.content)) for (var k = 0; k < m.content.length; k++) if (m.content[k] && m.content[k].type === "image") body.append(this.block(m.content[k]));
    art.append(body);
    return art;
  }
  if (role === "bashExecution") {
    art = this.card(i, "role-bash", "Shell", m.exitCode !== undefined && m.exitCode !== null ? "exit " + str(m.exitCode) : "");
    body.append(this.foldable("$ " + str(m.command), "command"), this.foldable(m.output || "", "output"));
    art.append(body);
    return art;
  }
  art = this.card(i, "role-" + (role === "user" ? "user" : "other"), ROLE_NAMES.get(role) || role, m.customType || "");
  if (role === "custom") body.append(this.folded(m.content));
  else this.content(body, m.content);
  art.append(body);
  return art;
};

// folded is the content of an extension's message in a fold, closed:
// extensions inject long context a reader seldom needs.
Renderer.prototype.folded = function (content) {
  var d = el("details", "custom");
  var text = typeof content === "string" ? content : textOf(content);
  var lines = text ? text.split("\n").length : 0;
  d.append(el("summary", null, "Content" + (lines ? " \u00b7 " + plural(lines, "line", "lines") : "")));
  var inner = el("div", "custom-body");
  this.content(inner, content);
  d.append(inner);
  return d;
};

Renderer.prototype.summary = function (i, title, extra, text) {
  var art = this.card(i, "summary", title, extra);
  var body = el("div", "entry-body");
  text = str(text);
  // What sets this summary apart from the others, when it does not
  // start with it: the folded text would show only a shared preamble.
  var x = this.tree.excerpt(i);
  if (x && text.replace(/\s+/g, " ").trim().indexOf(x.slice(0, 80)) !== 0) body.append(el("p", "summary-excerpt", x.length > 400 ? x.slice(0, 399) + "\u2026" : x));
  body.append(this.foldable(text, "summary-text"));
  art.append(body);
  return art;
};

Renderer.prototype.marker = function (i, text, data) {
  var e = this.tree.entries[i];
  var div = el("div", "marker");
  div.dataset.pos = String(i);
  div.append(el("span", null, text));
  var label = this.tree.labels.get(i);
  if (label !== undefined) div.append(el("span", "badge label", "\u2691 " + label));
  div.append(el("time", null, fmtTime(e.timestamp)));
  if (data !== undefined) {
    var d = el("details", "marker-data custom");
    d.append(el("summary", null, "data"), this.foldable(toJSON(data, true), "raw"));
    div.append(d);
  }
  return div;
};

// entry renders entry i; an entry that cannot be shown (of a shape no
// writer makes) shows as its JSON, so it costs no other entry.
Renderer.prototype.entry = function (i) {
  this.at = i;
  try {
    return this.entryOf(i);
  } catch (err) {
    return this.fallback(i, err);
  }
};

// fallback is the card of an entry the viewer cannot show otherwise.
Renderer.prototype.fallback = function (i, err) {
  var art = el("article", "entry role-other is-error");
  art.dataset.pos = String(i);
  var head = el("div", "entry-head");
  head.append(el("span", "role", "Entry"), el("span", "muted", "shown as stored: " + (err && typeof err.message === "string" ? err.message : "it cannot be shown")));
  art.append(head);
  var body = el("div", "entry-body");
  try { body.append(this.foldable(toJSON(this.tree.entries[i], true), "raw")); } catch (err2) { body.append(el("div", "note", "[entry that cannot be written]")); }
  art.append(body);
  return art;
};

Renderer.prototype.entryOf = function (i) {
  var t = this.tree, e = t.entries[i], m = t.message(i);
  if (m) return this.message(i, m);
  switch (e.type) {
    case "compaction":
      return this.summary(i, "Compaction summary", e.tokensBefore ? plural(e.tokensBefore, "token", "tokens") + " before" : "", e.summary);
    case "branch_summary": {
      var from = t.index(e.fromId);
      return this.summary(i, "Branch summary", from >= 0 ? "of: " + t.snippet(from, 60) : "", e.summary);
    }
    case "custom_message": {
      var art = this.card(i, "role-other", "Extension message", e.customType || "");
      var body = el("div", "entry-body");
      body.append(this.folded(e.content));
      art.append(body);
      return art;
    }
    case "model_change":
      return this.marker(i, "Model \u2192 " + modelName(e));
    case "thinking_level_change":
      return this.marker(i, "Thinking level \u2192 " + str(e.thinkingLevel));
    case "session_info":
      return this.marker(i, "Title \u2192 " + str(e.name));
    case "custom":
      return this.marker(i, "Custom \u00b7 " + str(e.customType), e.data);
  }
  return this.marker(i, str(e.type) || "entry", e);
};

// fork renders the branch switch shown under an entry with more than one
// branch below it.
Renderer.prototype.fork = function (i, kids, onPath) {
  var nav = el("nav", "fork");
  nav.setAttribute("aria-label", "Branches from here");
  nav.append(el("span", "fork-title", plural(kids.length, "branch", "branches") + " from here"));
  var self = this;
  kids.forEach(function (c) {
    var b = el("button", "fork-btn" + (onPath(c) ? " active" : ""), self.tree.snippet(self.tree.shownFrom(c), 48));
    b.type = "button";
    b.addEventListener("click", function () { self.actions.branch(c); });
    nav.append(b);
  });
  return nav;
};

// modelName is "provider / model" of a model change.
function modelName(e) {
  return [e.provider, e.modelId || e.model].filter(Boolean).map(str).join(" / ");
}
