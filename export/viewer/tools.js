// tools.js: the calls of pi's tools as pi's own export shows them: an
// edit as a diff, a write as the file it writes, a shell call as its
// command and its output. Other tools keep their arguments as JSON and
// their result as a card of its own.

var DIFF_CONTEXT = 3, DIFF_BUDGET = 4000000, DIFF_SHOWN = 60;

// toolView says how a tool call is shown: "bash", "edit", "write", or
// "" for the arguments as JSON.
function toolView(b) {
  var a = b && b.arguments;
  if (!a || typeof a !== "object" || Array.isArray(a)) return "";
  switch (b.name) {
    case "bash":
      return typeof a.command === "string" ? "bash" : "";
    case "edit":
      return typeof pathArg(a) === "string" && (typeof a.oldText === "string" || typeof a.newText === "string" || Array.isArray(a.edits)) ? "edit" : "";
    case "write":
      return typeof pathArg(a) === "string" && typeof a.content === "string" ? "write" : "";
  }
  return "";
}

function pathArg(a) { return typeof a.path === "string" ? a.path : a.file_path; }

// lineDiff compares two texts line by line (Myers' O(ND) algorithm, on
// what is left once the common first and last lines are set aside) and
// returns the lines as [op, text]: op " " kept, "-" removed, "+" added.
// Past a bound of work (two texts with little in common and many lines)
// it gives every old line removed and every new one added.
// Lines are compared as numbers (each distinct line numbered once), so
// the work is the texts' length once plus the steps of the search, however
// long the lines and whatever they share.
function lineDiff(oldText, newText) {
  var ta = oldText === "" ? [] : str(oldText).split("\n"), tb = newText === "" ? [] : str(newText).split("\n");
  var ids = new Map(), idOf = function (l) { var v = ids.get(l); if (v === undefined) ids.set(l, v = ids.size); return v; };
  var a = ta.map(idOf), b = tb.map(idOf);
  var ops = lineDiffIds(a, b);
  var ia = 0, ib = 0;
  for (var k = 0; k < ops.length; k++) {
    var op = ops[k][0];
    ops[k][1] = op === "+" ? tb[ib++] : ta[ia++];
    if (op === " ") ib++;
  }
  return ops;
}

function lineDiffIds(a, b) {
  var pre = 0, suf = 0;
  while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
  while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf]) suf++;
  var out = [];
  for (var k = 0; k < pre; k++) out.push([" ", a[k]]);
  var mid = myers(a.slice(pre, a.length - suf), b.slice(pre, b.length - suf));
  for (k = 0; k < mid.length; k++) out.push(mid[k]);
  for (k = a.length - suf; k < a.length; k++) out.push([" ", a[k]]);
  return out;
}

function myers(a, b) {
  var n = a.length, m = b.length, max = n + m, off = max + 1, k;
  var plain = function () {
    var o = [];
    for (k = 0; k < n; k++) o.push(["-", a[k]]);
    for (k = 0; k < m; k++) o.push(["+", b[k]]);
    return o;
  };
  if (!n || !m) return plain();
  var limit = Math.min(max, Math.floor(DIFF_BUDGET / (2 * max + 3)));
  var v = new Int32Array(2 * max + 3), trace = [];
  for (var d = 0; d <= limit; d++) {
    trace.push(v.slice());
    for (k = -d; k <= d; k += 2) {
      var x = k === -d || (k !== d && v[off + k - 1] < v[off + k + 1]) ? v[off + k + 1] : v[off + k - 1] + 1;
      var y = x - k;
      while (x < n && y < m && a[x] === b[y]) { x++; y++; }
      v[off + k] = x;
      if (x >= n && y >= m) return backtrack(a, b, trace, x, y, off);
    }
  }
  return plain();
}

function backtrack(a, b, trace, x, y, off) {
  var out = [];
  for (var d = trace.length - 1; d > 0; d--) {
    var v = trace[d], k = x - y;
    var pk = k === -d || (k !== d && v[off + k - 1] < v[off + k + 1]) ? k + 1 : k - 1;
    var px = v[off + pk], py = px - pk;
    while (x > px && y > py) { out.push([" ", a[x - 1]]); x--; y--; }
    if (x === px) out.push(["+", b[py]]); else out.push(["-", a[px]]);
    x = px; y = py;
  }
  while (x > 0 && y > 0) { out.push([" ", a[x - 1]]); x--; y--; }
  return out.reverse();
}

// diffRows gives the rows of diff lines as [class, text], runs of
// unchanged lines longer than the context around the changes cut to a
// row that counts them.
function diffRows(ops) {
  var rows = [], cls = new Map([[" ", "diff-ctx"], ["-", "diff-del"], ["+", "diff-add"]]);
  for (var k = 0; k < ops.length;) {
    if (ops[k][0] !== " ") { rows.push([cls.get(ops[k][0]), ops[k][0] + ops[k][1]]); k++; continue; }
    var end = k;
    while (end < ops.length && ops[end][0] === " ") end++;
    var keepHead = k === 0 ? 0 : DIFF_CONTEXT, keepTail = end === ops.length ? 0 : DIFF_CONTEXT;
    if (end - k <= keepHead + keepTail + 1) keepHead = end - k;
    for (var j = k; j < k + keepHead && j < end; j++) rows.push(["diff-ctx", " " + ops[j][1]]);
    var cut = end - k - keepHead - keepTail;
    if (cut > 0) rows.push(["diff-gap", "\u22ef " + plural(cut, "unchanged line", "unchanged lines")]);
    for (j = Math.max(k + keepHead, end - keepTail); j < end; j++) rows.push(["diff-ctx", " " + ops[j][1]]);
    k = end;
  }
  return rows;
}

// diffBox renders the rows rowsOf() gives, folded like other long text:
// at most shown rows (budget.left, shared by the diffs of one call) until
// the reader opens it; the rest are built, and rowsOf even run, only
// then.
Renderer.prototype.diffBox = function (rowsOf, budget) {
  var box = el("div", "diff"), shown = Math.min(DIFF_SHOWN, budget.left), rows = null;
  var fill = function (upto) {
    box.textContent = "";
    for (var k = 0; k < rows.length && k < upto; k++) box.append(el("div", rows[k][0], rows[k][1]));
  };
  if (shown > 0) {
    rows = rowsOf();
    if (rows.length <= shown + 1) { fill(rows.length); budget.left -= rows.length; return box; }
    fill(shown);
    budget.left -= shown;
  }
  var wrap = el("div", "fold");
  var btn = el("button", "fold-toggle", rows ? "Show all " + plural(rows.length, "line", "lines") : "Show diff");
  btn.type = "button";
  btn.setAttribute("aria-expanded", "false");
  var closed = btn.textContent;
  btn.addEventListener("click", function () {
    var open = btn.getAttribute("aria-expanded") !== "true";
    if (!rows) rows = rowsOf();
    fill(open ? rows.length : shown);
    btn.textContent = open ? "Collapse" : closed;
    btn.setAttribute("aria-expanded", String(open));
    wrap.classList.toggle("open", open);
  });
  wrap.append(box, btn);
  return wrap;
};

// recordedRows gives the rows of the diff pi's edit tool keeps in its
// result's details: lines starting "+", "-" or " ", with line numbers.
function recordedRows(text) {
  return str(text).split("\n").map(function (l) {
    return [l[0] === "+" ? "diff-add" : l[0] === "-" ? "diff-del" : "diff-ctx", l];
  });
}

// toolCall renders a call of one of pi's tools with what its result
// holds, or returns null for the generic rendering.
Renderer.prototype.toolCall = function (b) {
  var kind = toolView(b);
  if (!kind) return null;
  var a = b.arguments, t = this.tree;
  var ri = t.resultOf(b.id, this.at), r = ri >= 0 ? t.message(ri) : null;
  var out = r ? textOf(r.content) : "";
  var call = el("div", "tool-call tool-" + kind + (r && r.isError ? " is-error" : ""));
  var head = el("div", "tool-head");
  head.append(el("span", "tool-icon", "\u2699"), el("span", "tool-name", kind));
  if (kind !== "bash") head.append(el("span", "tool-path", str(pathArg(a))));
  if (b.id) head.append(el("span", "muted", str(b.id)));
  call.append(head);
  switch (kind) {
    case "bash": {
      call.append(this.foldable("$ " + a.command, "command"));
      var rest = Object.keys(a).filter(function (k) { return k !== "command"; });
      if (rest.length) call.append(el("div", "muted", rest.map(function (k) { return k + " " + (typeof a[k] === "string" ? a[k] : toJSON(a[k], false)); }).join(" \u00b7 ")));
      if (out) call.append(this.foldable(out, "output"));
      else if (!r) call.append(el("div", "note", "no output recorded"));
      break;
    }
    case "edit": {
      var recorded = r && r.details && typeof r.details === "object" && typeof r.details.diff === "string" ? r.details.diff : "";
      var budget = { left: DIFF_SHOWN * 2 };
      if (recorded) call.append(this.diffBox(function () { return recordedRows(recorded); }, budget));
      else {
        var edits = Array.isArray(a.edits) ? a.edits : [a], self = this;
        var addEdit = function (k) {
          var ed = edits[k] && typeof edits[k] === "object" ? edits[k] : {};
          return self.diffBox(diffOf(ed), budget);
        };
        for (var k = 0; k < edits.length && (budget.left > 0 || k === 0); k++) call.append(addEdit(k));
        // The edits past the budget: one button, which builds them.
        if (k < edits.length) {
          var from = k, more = el("button", "fold-toggle", "Show " + plural(edits.length - from, "more edit", "more edits"));
          more.type = "button";
          more.addEventListener("click", function () {
            var frag = document.createDocumentFragment();
            for (var j = from; j < edits.length; j++) frag.append(addEdit(j));
            more.replaceWith(frag);
          });
          call.append(more);
        }
      }
      this.resultNote(call, r, out);
      break;
    }
    case "write": {
      var n = a.content === "" ? 0 : a.content.replace(/\n$/, "").split("\n").length;
      head.append(el("span", "muted", plural(n, "line", "lines")));
      call.append(this.foldable(a.content, "code"));
      this.resultNote(call, r, out);
      break;
    }
  }
  return call;
};

// resultNote adds what the result of an edit or a write says: its
// output when it failed, else its one line ("Successfully replaced...").
Renderer.prototype.resultNote = function (call, r, out) {
  if (!r || !out) return;
  if (r.isError || out.length > 300 || out.indexOf("\n") >= 0) call.append(this.foldable(out, "output"));
  else call.append(el("div", "muted tool-note", out));
};

// diffOf gives the function that computes the rows of the diff of one
// edit.
function diffOf(ed) {
  return function () { return diffRows(lineDiff(typeof ed.oldText === "string" ? ed.oldText : "", typeof ed.newText === "string" ? ed.newText : "")); };
}
