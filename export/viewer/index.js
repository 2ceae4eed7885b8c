// index.js: the session's tree, indexed once in O(n).
//
// Entries are kept as the envelope gives them; the index holds, per entry
// (by its position in the log): its parent, its children (a first-child /
// next-sibling list), its depth, and the labels. Every walk is bounded
// by the number of entries, so a hostile file with a parent cycle cannot
// hang the page.

function Tree(env) {
  var entries = Array.isArray(env.entries) ? env.entries : [];
  var n = entries.length;
  this.env = env;
  this.entries = entries;
  this.n = n;
  this.byId = new Map();
  for (var i = 0; i < n; i++) {
    var e = entries[i];
    if (!e || typeof e !== "object") { entries[i] = e = {}; }
    if (typeof e.id === "string" && !this.byId.has(e.id)) this.byId.set(e.id, i);
  }
  var parent = new Int32Array(n).fill(-1);
  var first = new Int32Array(n).fill(-1);
  var last = new Int32Array(n).fill(-1);
  var next = new Int32Array(n).fill(-1);
  for (i = 0; i < n; i++) {
    var p = this.byId.get(entries[i].parentId);
    if (p === undefined || p === i) continue;
    parent[i] = p;
    if (last[p] < 0) first[p] = i; else next[last[p]] = i;
    last[p] = i;
  }
  this.parent = parent;
  this.first = first;
  this.next = next;
  this.depth = this.depths();
  this.labels = this.readLabels();
  this.leaves = this.readLeaves();
}

// depths computes every entry's distance from its root: each entry is
// settled once, walking up only through entries not yet settled. A cycle
// is cut where it closes.
Tree.prototype.depths = function () {
  var n = this.n, depth = new Int32Array(n).fill(-1), stack = [];
  for (var i = 0; i < n; i++) {
    var j = i;
    while (j >= 0 && depth[j] === -1) { depth[j] = -2; stack.push(j); j = this.parent[j]; }
    var d = j >= 0 && depth[j] >= 0 ? depth[j] : -1;
    if (j >= 0 && depth[j] === -2) { this.parent[stack[stack.length - 1]] = -1; d = -1; } // a cycle: cut its last link
    while (stack.length) { var k = stack.pop(); d++; depth[k] = d; }
  }
  return depth;
};

Tree.prototype.readLabels = function () {
  var out = new Map(), given = this.env.tree && this.env.tree.labels;
  if (given && typeof given === "object") {
    for (var id in given) {
      if (Object.prototype.hasOwnProperty.call(given, id) && this.byId.has(id) && typeof given[id] === "string") out.set(this.byId.get(id), given[id]);
    }
    return out;
  }
  for (var i = 0; i < this.n; i++) { // no tree given: fold the label entries
    var e = this.entries[i];
    if (e.type !== "label" || !this.byId.has(e.targetId)) continue;
    if (e.label) out.set(this.byId.get(e.targetId), str(e.label)); else out.delete(this.byId.get(e.targetId));
  }
  return out;
};

Tree.prototype.readLeaves = function () {
  var out = [], seen = new Set(), given = this.env.tree && this.env.tree.leaves;
  if (Array.isArray(given)) {
    for (var k = 0; k < given.length; k++) {
      var i = this.byId.get(given[k]);
      if (i !== undefined && !seen.has(i)) { seen.add(i); out.push(i); }
    }
  }
  if (!out.length) {
    for (i = 0; i < this.n; i++) if (this.first[i] < 0 && !this.hidden(i)) out.push(i);
  }
  out.sort(function (a, b) { return a - b; });
  return out;
};

Tree.prototype.index = function (id) {
  var i = this.byId.get(id);
  return i === undefined ? -1 : i;
};

// path returns the positions from the root to leaf, root first.
Tree.prototype.path = function (leaf) {
  var out = [];
  for (var j = leaf, steps = 0; j >= 0 && steps <= this.n; j = this.parent[j], steps++) out.push(j);
  return out.reverse();
};

// down is the latest child of i that starts a branch (see branchesAt), or
// -1.
Tree.prototype.down = function (i) {
  var kids = this.branchesAt(i);
  return kids.length ? kids[kids.length - 1] : -1;
};

// leafUnder follows the latest branch down from i to a leaf.
Tree.prototype.leafUnder = function (i) {
  for (var steps = 0, c; (c = this.down(i)) >= 0 && steps <= this.n; steps++) i = c;
  return i;
};

// defaultLeaf is the envelope's leaf, else its branch, else the latest leaf.
Tree.prototype.defaultLeaf = function () {
  var i = this.index(this.env.leaf);
  if (i < 0) i = this.index(this.env.branch);
  if (i < 0 && this.leaves.length) i = this.leaves[this.leaves.length - 1];
  return i;
};

// hidden says whether an entry is left out of the stream: labels are
// shown on the entries they name instead, and the markers that record a
// move of the leaf (custom entries of type "agentsession.leaf") say
// nothing to a reader.
Tree.prototype.hidden = function (i) {
  var e = this.entries[i];
  return e.type === "label" || (e.type === "custom" && e.customType === "agentsession.leaf");
};

// branchesAt lists the children of i that start a branch worth showing:
// not a marker or label with nothing under it.
Tree.prototype.branchesAt = function (i) {
  var out = [];
  for (var c = this.first[i]; c >= 0; c = this.next[c]) if (!this.hidden(c) || this.first[c] >= 0) out.push(c);
  return out;
};

// shownFrom is the first entry at or under i (following the latest
// branch, as leafUnder does) that the stream shows.
Tree.prototype.shownFrom = function (i) {
  for (var steps = 0, c; this.hidden(i) && (c = this.down(i)) >= 0 && steps <= this.n; steps++) i = c;
  return i;
};

// message returns an entry's message, or null.
Tree.prototype.message = function (i) {
  var e = this.entries[i];
  if (e.type === "message" && e.message && typeof e.message === "object") return e.message;
  return null;
};

// Tool results and their calls. A result answers a call of the nearest
// assistant message above it on its path (the one that made the calls
// its results answer); only a result under a call is ever shown with
// it, so a call on one branch never shows another branch's result of
// the same id. Built once, in O(n), on first use.
Tree.prototype.readResults = function () {
  var n = this.n, asst = new Int32Array(n).fill(-1), order = new Int32Array(n), count = new Int32Array(n + 1);
  // Entries by depth (a counting sort), so each one's parent is settled first.
  for (var i = 0; i < n; i++) count[this.depth[i] + 1]++;
  for (var d = 1; d <= n; d++) count[d] += count[d - 1];
  for (i = 0; i < n; i++) order[count[this.depth[i]]++] = i;
  this.results = new Map(); // assistant entry -> Map(call id -> result entries, in log order)
  this.answers = new Map(); // result entry -> [assistant entry, call block]
  for (var o = 0; o < n; o++) {
    i = order[o];
    var p = this.parent[i], m = this.message(i);
    asst[i] = m && m.role === "assistant" ? i : p >= 0 ? asst[p] : -1;
  }
  for (i = 0; i < n; i++) {
    m = this.message(i);
    if (!m || m.role !== "toolResult" || typeof m.toolCallId !== "string" || this.parent[i] < 0) continue;
    var a = asst[this.parent[i]], call = a >= 0 ? this.callIn(a, m.toolCallId) : null;
    if (!call) continue;
    var byId = this.results.get(a);
    if (!byId) this.results.set(a, byId = new Map());
    var list = byId.get(m.toolCallId);
    if (!list) byId.set(m.toolCallId, list = []);
    list.push(i);
    this.answers.set(i, [a, call]);
  }
};

// callIn is the first tool call block of id callId in the message of
// entry a, or null.
Tree.prototype.callIn = function (a, callId) {
  var m = this.message(a);
  if (!m || !Array.isArray(m.content)) return null;
  for (var k = 0; k < m.content.length; k++) {
    var b = m.content[k];
    if (b && typeof b === "object" && b.type === "toolCall" && b.id === callId) return b;
  }
  return null;
};

// onPath says whether entry i is on the path shown; the app sets it.
Tree.prototype.onPath = function () { return true; };

// resultOf is the tool result entry that answers the call of id callId
// made by the message of entry at: the first of its results on the path
// shown, or -1.
Tree.prototype.resultOf = function (callId, at) {
  if (!this.results) this.readResults();
  var byId = this.results.get(at), list = byId && typeof callId === "string" ? byId.get(callId) : undefined;
  if (!list) return -1;
  for (var k = 0; k < list.length; k++) if (this.onPath(list[k])) return list[k];
  return -1;
};

// callOf is the tool call block result entry i is shown with, or null:
// its call, when i is the result that call shows.
Tree.prototype.callOf = function (i) {
  if (!this.results) this.readResults();
  var ans = this.answers.get(i);
  if (!ans) return null;
  return this.resultOf(ans[1].id, ans[0]) === i ? ans[1] : null;
};

// excerpt is what sets the summary of entry i (a compaction or a branch
// summary) apart: its lines that no other summary of the session holds
// (summaries written by one agent start with the same preamble and
// headings, so their first words are the same for every one), headings
// left out when it has other lines, or, when it has none of its own, its
// first lines. Computed once for all summaries.
Tree.prototype.excerpt = function (i) {
  if (!this.excerpts) {
    var lists = new Map(), counts = new Map();
    for (var j = 0; j < this.n; j++) {
      var e = this.entries[j];
      if ((e.type !== "compaction" && e.type !== "branch_summary") || typeof e.summary !== "string") continue;
      var seen = new Set();
      e.summary.split("\n").forEach(function (l) {
        l = l.trim();
        if (l && !seen.has(l)) { seen.add(l); counts.set(l, (counts.get(l) || 0) + 1); }
      });
      lists.set(j, Array.from(seen));
    }
    this.excerpts = new Map();
    var self = this;
    lists.forEach(function (ls, j) {
      var own = ls.filter(function (l) { return counts.get(l) === 1; });
      var prose = own.filter(function (l) { return !/^#{1,6}\s/.test(l); }); // a heading says less than what is under it
      self.excerpts.set(j, (prose.length ? prose : own.length ? own : ls).join(" ").replace(/\s+/g, " "));
    });
  }
  var x = this.excerpts.get(i);
  return x === undefined ? "" : x;
};

// usage sums the usage of every message of the session (every branch,
// each entry once): the tokens of input, output, cache read and cache
// write, the cost, and the number of model calls that reported usage.
Tree.prototype.usage = function () {
  var s = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cost: 0, calls: 0 };
  var n = function (v) { v = num(v); return isFinite(v) ? v : 0; };
  for (var i = 0; i < this.n; i++) {
    var m = this.message(i), u = m && m.usage;
    if (!u || typeof u !== "object") continue;
    s.calls++;
    s.input += n(u.input);
    s.output += n(u.output);
    s.cacheRead += n(u.cacheRead);
    s.cacheWrite += n(u.cacheWrite);
    if (u.cost && typeof u.cost === "object") s.cost += n(u.cost.total);
  }
  return s;
};

// textOf gives the plain text of a message's content (string or blocks).
function textOf(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  var parts = [];
  for (var k = 0; k < content.length; k++) {
    var b = content[k];
    if (b && b.type === "text" && typeof b.text === "string") parts.push(b.text);
  }
  return parts.join("\n");
}

// snippet describes entry i in a line, for the side panel.
Tree.prototype.snippet = function (i, max) {
  var e = this.entries[i], m = this.message(i), s = "";
  if (m) s = textOf(m.content) || (m.role === "assistant" ? toolNames(m.content) : "") || m.command || m.role || "";
  else if (e.summary) s = this.excerpt(i) || e.summary;
  else if (e.type === "custom_message") s = textOf(e.content);
  else s = e.type || "entry";
  s = str(s).replace(/\s+/g, " ").trim();
  return s.length > max ? s.slice(0, max - 1) + "\u2026" : s;
};

function toolNames(content) {
  if (!Array.isArray(content)) return "";
  var names = [];
  for (var k = 0; k < content.length; k++) if (content[k] && content[k].type === "toolCall") names.push(str(content[k].name));
  return names.length ? "tool: " + names.join(", ") : "";
}

// lastUserBefore finds, walking up from leaf, the nearest user message
// (within a few hundred entries: the panel lists many leaves).
Tree.prototype.lastUserBefore = function (leaf) {
  for (var j = leaf, steps = 0; j >= 0 && steps <= 500; j = this.parent[j], steps++) {
    var m = this.message(j);
    if (m && m.role === "user") return j;
  }
  return leaf;
};
