// app.js: reads the embedded session, fills the header and the side
// panel, and shows the path to the chosen leaf.

var MAX_NAV = 300;

function $(id) { return document.getElementById(id); }

function fail(msg) {
  var s = $("status");
  s.textContent = msg;
  s.classList.add("error");
}

function App(env) {
  var self = this;
  this.tree = new Tree(env);
  this.onPathOf = new Int32Array(this.tree.n).fill(-1); // entry -> item index, on the current path
  this.leaf = -1;
  this.items = [];
  this.tree.onPath = function (i) { return self.onPathOf[i] >= 0 || self.hiddenOnPath(i); };
  this.renderer = new Renderer(this.tree, { branch: function (c) { self.branch(c); } });
  this.list = new List(this.renderer, {
    onPath: function (i) { return self.onPathOf[i] >= 0 || self.hiddenOnPath(i); },
    moved: function (k) { self.moved(k); }
  });
  this.meta();
  this.panel();
  this.wire();
}

App.prototype.hiddenOnPath = function (i) {
  return this.pathSet !== undefined && this.pathSet.has(i);
};

App.prototype.meta = function () {
  var env = this.tree.env, h = env.header || {}, dl = $("meta");
  var add = function (k, v) {
    if (v === undefined || v === null || v === "") return;
    var d = el("div", "meta-row");
    d.append(el("dt", null, k), el("dd", null, v));
    dl.append(d);
  };
  add("Session", h.id);
  add("Directory", h.cwd);
  add("Created", fmtTime(h.timestamp));
  add("Forked from", h.parentSession);
  add("Exported", str(env.exported).indexOf("0001-") === 0 ? "" : fmtTime(env.exported)); // the zero time: not recorded
  var u = this.tree.usage();
  if (u.calls) try {
    var d = el("div", "meta-row meta-wide");
    var dd = el("dd", null, ["input " + fmtInt(u.input), "output " + fmtInt(u.output), "cache read " + fmtInt(u.cacheRead), "cache write " + fmtInt(u.cacheWrite)].join(" \u00b7 "));
    dd.append(el("span", "meta-note", " (summed over the usage of " + plural(u.calls, "model call", "model calls") + ", all branches)"));
    d.append(el("dt", null, "Tokens"), dd);
    dl.append(d);
    add("Cost", fmtCost(u.cost) ? fmtCost(u.cost) + " (all branches)" : "");
  } catch (err) {
    add("Tokens", "cannot be summed: " + str(err && err.message));
  }
  this.totals = el("dd");
  var d = el("div", "meta-row");
  d.append(el("dt", null, "This branch"), this.totals);
  dl.append(d);
  if (env.redacted && env.redacted.counts) {
    var n = 0;
    for (var k in env.redacted.counts) if (Object.prototype.hasOwnProperty.call(env.redacted.counts, k)) n += num(env.redacted.counts[k]) || 0;
    add("Redacted", plural(n, "secret", "secrets") + " replaced");
  }
};

function navButton(title, sub, extra) {
  var li = el("li");
  var b = el("button", "nav-item");
  b.type = "button";
  b.append(el("span", "nav-title", title));
  if (extra) b.append(el("span", "badge", extra));
  if (sub) b.append(el("span", "nav-sub", sub));
  li.append(b);
  return { li: li, button: b };
}

App.prototype.panel = function () {
  var t = this.tree, self = this;
  var ul = $("branches");
  this.branchButtons = new Map();
  t.leaves.slice(-MAX_NAV).forEach(function (leaf, k) {
    var u = t.lastUserBefore(leaf);
    var current = leaf === t.index(t.env.leaf) ? "current" : "";
    var item = navButton("Branch " + (k + 1), t.snippet(u, 70) + " \u00b7 " + plural(t.depth[leaf] + 1, "entry", "entries"), current);
    item.button.dataset.leaf = String(leaf);
    item.button.addEventListener("click", function () { self.show(leaf, "end"); self.closePanel(); });
    self.branchButtons.set(leaf, item.button);
    ul.append(item.li);
  });
  if (t.leaves.length > MAX_NAV) ul.append(el("li", "note", "and " + plural(t.leaves.length - MAX_NAV, "older branch", "older branches")));

  var labels = Array.from(t.labels.keys()).sort(function (a, b) { return a - b; });
  ul = $("labels");
  labels.slice(0, MAX_NAV).forEach(function (i) {
    var item = navButton("\u2691 " + t.labels.get(i), t.snippet(i, 70));
    item.button.addEventListener("click", function () { self.jump(i); self.closePanel(); });
    ul.append(item.li);
  });
  if (!labels.length) ul.append(el("li", "note", "none"));

  ul = $("events");
  var names = new Map([["compaction", "Compaction"], ["branch_summary", "Branch summary"], ["model_change", "Model change"], ["custom", "Custom"], ["session_info", "Title"]]);
  var count = 0, days = new Set();
  for (var i = 0; i < t.n; i++) if (names.has(t.entries[i].type) && !t.hidden(i)) days.add(fmtTime(t.entries[i].timestamp).slice(0, 10));
  // Events of one day show their time to the second, else their date
  // too: several compactions may come within a minute.
  var when = days.size > 1 ? function (s) { return s.slice(5, 19); } : function (s) { return s.slice(11, 19); };
  for (i = 0; i < t.n; i++) {
    var kind = names.get(t.entries[i].type);
    if (!kind || t.hidden(i)) continue;
    if (++count > MAX_NAV) continue;
    (function (i, kind) {
      var e = t.entries[i];
      var sub = e.type === "model_change" ? modelName(e) :
        e.type === "custom" ? str(e.customType) : e.type === "session_info" ? str(e.name) : t.snippet(i, 70);
      var item = navButton(kind, sub, when(fmtTime(e.timestamp)));
      item.button.addEventListener("click", function () { self.jump(i); self.closePanel(); });
      ul.append(item.li);
    })(i, kind);
  }
  if (count > MAX_NAV) ul.append(el("li", "note", "and " + plural(count - MAX_NAV, "more event", "more events")));
  if (!count) ul.append(el("li", "note", "none"));
};

// show makes leaf the current branch and shows item k of its path (or
// its start, or its end for align "end").
App.prototype.show = function (leaf, align, k) {
  var t = this.tree;
  if (leaf !== this.leaf) {
    this.onPathOf.fill(-1);
    var path = t.path(leaf), items = [];
    this.pathSet = new Set();
    var msgs = 0, cost = 0;
    for (var p = 0; p < path.length; p++) {
      var i = path[p];
      if (t.hidden(i)) { this.pathSet.add(i); continue; }
      this.onPathOf[i] = items.length;
      items.push(i);
      var m = t.message(i);
      if (m) {
        msgs++;
        if (m.usage && m.usage.cost) cost += num(m.usage.cost.total) || 0;
      }
    }
    this.items = items;
    this.leaf = leaf;
    this.totals.textContent = [plural(msgs, "message", "messages"), fmtCost(cost), t.leaves.length > 1 ? plural(t.leaves.length, "branch", "branches") + " in all" : ""].filter(Boolean).join(" \u00b7 ");
    var seek = $("seek");
    seek.max = String(Math.max(0, items.length - 1));
    this.branchButtons.forEach(function (b, l) {
      b.classList.toggle("active", l === leaf);
      b.setAttribute("aria-current", l === leaf ? "true" : "false");
    });
    this.list.items = items;
  }
  if (k === undefined) k = align === "end" ? this.items.length - 1 : 0;
  return this.list.show(k, align);
};

// jump shows entry i, switching to a branch through it if the current
// one does not hold it.
App.prototype.jump = function (i) {
  var t = this.tree;
  for (var steps = 0; i >= 0 && t.hidden(i) && steps <= t.n; steps++) i = t.parent[i];
  if (i < 0) return;
  if (this.onPathOf[i] < 0) this.show(t.leafUnder(i), "top", 0);
  var node = this.show(this.leaf, "center", this.onPathOf[i]);
  if (node) {
    node.classList.remove("flash");
    void node.offsetWidth;
    node.classList.add("flash");
  }
};

// branch switches to the branch that starts with child c of a fork and
// shows its first entry.
App.prototype.branch = function (c) {
  var t = this.tree;
  this.show(t.leafUnder(c), "top", 0);
  this.jump(t.shownFrom(c));
};

App.prototype.moved = function (k) {
  var n = this.items.length;
  $("pos").textContent = n ? fmtInt(k + 1) + " / " + fmtInt(n) : "empty";
  $("seek").value = String(k);
};

App.prototype.closePanel = function () { document.body.classList.remove("panel-open"); };

App.prototype.wire = function () {
  var self = this;
  $("panel-open").addEventListener("click", function () { document.body.classList.toggle("panel-open"); });
  $("panel-close").addEventListener("click", function () { self.closePanel(); });
  $("scrim").addEventListener("click", function () { self.closePanel(); });
  $("go-top").addEventListener("click", function () { self.show(self.leaf, "top", 0); });
  $("go-end").addEventListener("click", function () { self.show(self.leaf, "end"); });
  var seek = $("seek");
  seek.addEventListener("input", function () { $("pos").textContent = fmtInt(Number(seek.value) + 1) + " / " + fmtInt(self.items.length); });
  seek.addEventListener("change", function () { self.show(self.leaf, "top", Number(seek.value)); });
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "Escape") self.closePanel();
  });
};

// readEntries joins the entries the page holds: those of the envelope,
// then those of each element of class "session-entries", in order.
function readEntries(first) {
  var out = Array.isArray(first) ? first : [];
  var parts = document.querySelectorAll("script.session-entries");
  for (var k = 0; k < parts.length; k++) {
    var part = JSON.parse(parts[k].textContent);
    if (!Array.isArray(part)) throw new Error("entries element " + k + " is not an array");
    for (var j = 0; j < part.length; j++) out.push(part[j]);
  }
  return out;
}

function start() {
  var env, marks = [Math.round(performance.now())];
  try {
    var raw = $("session-data").textContent;
    marks.push(Math.round(performance.now()));
    env = JSON.parse(raw);
    if (env && typeof env === "object") env.entries = readEntries(env.entries);
    marks.push(Math.round(performance.now()));
  } catch (err) {
    fail("This page's session data cannot be read: " + err.message);
    return;
  }
  if (!env || typeof env !== "object") { fail("This page holds no session."); return; }
  var app = new App(env);
  marks.push(Math.round(performance.now()));
  var leaf = app.tree.defaultLeaf();
  if (leaf < 0) { $("status").textContent = "This session has no entries."; return; }
  app.show(leaf, "top", 0);
  // A link to the page with #<entry id> opens at that entry.
  var toHash = function () {
    var id = "";
    try { id = decodeURIComponent(location.hash.slice(1)); } catch (err) { return; }
    var want = id ? app.tree.index(id) : -1;
    if (want >= 0) app.jump(want);
  };
  toHash();
  window.addEventListener("hashchange", toHash);
  marks.push(Math.round(performance.now()));
  document.body.dataset.marks = marks.join(",");
  document.body.dataset.ready = "true";
  // When the first entries were on screen, in ms from the navigation:
  // the browser test reports it.
  document.body.dataset.readyMs = String(Math.round(performance.now()));
  app.lineDiff = lineDiff; // for the browser test, which checks it
  window.agentsessionViewer = app;
}

start();
