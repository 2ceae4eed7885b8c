// list.js: the conversation as a window of rendered items.
//
// Only a window of the path's items is in the DOM: as the reader
// scrolls near an end of it, a chunk is rendered there, and items far
// out of view on the other side are removed, with the scroll position
// kept where it was. Jumps (a label, the seek slider, End) render a new
// window around their target. So the page holds a few hundred nodes
// whether the path has ten entries or thirty thousand.

var CHUNK = 30, MAX_ITEMS = 150;

function List(renderer, hooks) {
  this.r = renderer;
  this.hooks = hooks;
  this.box = document.getElementById("list");
  this.before = document.getElementById("before");
  this.after = document.getElementById("after");
  this.items = [];
  this.start = 0;
  this.end = 0;
  this.pending = false;
  var self = this;
  var kick = function () { self.schedule(); };
  if ("IntersectionObserver" in window) {
    var io = new IntersectionObserver(kick, { rootMargin: "1200px 0px" });
    io.observe(this.before);
    io.observe(this.after);
  }
  window.addEventListener("scroll", kick, { passive: true });
  window.addEventListener("resize", kick);
}

List.prototype.schedule = function () {
  if (this.pending) return;
  this.pending = true;
  var self = this;
  requestAnimationFrame(function () { self.pending = false; self.pump(); });
};

// node renders item k: its entry, and the branch switch under it when
// the conversation forks there.
List.prototype.node = function (k) {
  var i = this.items[k], tree = this.r.tree;
  var div = document.createElement("div");
  div.className = "item";
  div.dataset.k = String(k);
  div.append(this.r.entry(i));
  var kids = tree.branchesAt(i);
  if (kids.length > 1) {
    try { div.append(this.r.fork(i, kids, this.hooks.onPath)); } catch (err) { div.append(el("div", "note", plural(kids.length, "branch", "branches") + " from here")); }
  }
  return div;
};

List.prototype.range = function (from, to) {
  var frag = document.createDocumentFragment();
  for (var k = from; k < to; k++) frag.append(this.node(k));
  return frag;
};

// show renders a window around item k and brings it into view.
List.prototype.show = function (k, align) {
  var n = this.items.length;
  k = Math.max(0, Math.min(k, n - 1));
  this.box.textContent = "";
  this.start = Math.max(0, Math.min(k - CHUNK, n - 2 * CHUNK));
  this.end = Math.min(n, this.start + 2 * CHUNK + 1);
  if (n > 0) this.box.append(this.range(this.start, this.end));
  var target = this.find(k);
  if (!target) { window.scrollTo(0, 0); return null; }
  if (align === "end") window.scrollTo(0, document.documentElement.scrollHeight);
  else if (align === "top" && k === 0) window.scrollTo(0, 0);
  else target.scrollIntoView({ block: align === "center" ? "center" : "start" });
  this.schedule();
  return target;
};

List.prototype.find = function (k) {
  if (k < this.start || k >= this.end) return null;
  return this.box.children[k - this.start] || null;
};

// keep runs change, then scrolls so that anchor stays where it was on
// the screen.
function keep(anchor, change) {
  var before = anchor ? anchor.getBoundingClientRect().top : 0;
  change();
  if (anchor && anchor.isConnected) window.scrollBy(0, anchor.getBoundingClientRect().top - before);
}

// pump renders toward whichever end of the window is near the viewport
// and drops what is far from it; it runs again until nothing changes.
List.prototype.pump = function () {
  var vh = window.innerHeight || 800, load = 1.5 * vh, drop = 3 * vh, n = this.items.length, self = this;
  var changed = false;
  if (this.end < n && this.after.getBoundingClientRect().top < vh + load) {
    var to = Math.min(n, this.end + CHUNK);
    this.box.append(this.range(this.end, to));
    this.end = to;
    changed = true;
  } else if (this.start > 0 && this.before.getBoundingClientRect().bottom > -load) {
    var from = Math.max(0, this.start - CHUNK);
    keep(this.box.firstElementChild, function () { self.box.prepend(self.range(from, self.start)); });
    this.start = from;
    changed = true;
  }
  // Drop items far above or below the viewport, down to the window size.
  var first = this.box.firstElementChild;
  var cut = 0;
  while (this.end - this.start - cut > MAX_ITEMS && first && first.getBoundingClientRect().bottom < -drop) { cut++; first = first.nextElementSibling; }
  if (cut > 0) {
    keep(first, function () { for (var c = 0; c < cut; c++) self.box.firstElementChild.remove(); });
    this.start += cut;
    changed = true;
  }
  var last = this.box.lastElementChild;
  while (this.end - this.start > MAX_ITEMS && last && last.getBoundingClientRect().top > vh + drop) {
    var prev = last.previousElementSibling;
    last.remove();
    last = prev;
    this.end--;
    changed = true;
  }
  this.hooks.moved(this.topItem());
  if (changed) this.schedule();
};

// topItem is the first item whose bottom is below the top of the screen.
List.prototype.topItem = function () {
  var kids = this.box.children;
  for (var c = 0; c < kids.length; c++) {
    if (kids[c].getBoundingClientRect().bottom > 0) return this.start + c;
  }
  return Math.max(0, this.end - 1);
};
