"""The stylesheet and script of the HTML report, inlined by :mod:`tfprof_lite.report`.

Contract: plain strings, no external resources (no fonts, no CDN, no network): the
report must work from a file on a machine without a network. The script is
vanilla JavaScript (ES2017) and only ever inserts profile text with
``textContent``/``createTextNode``, never as HTML. It provides:

* sortable tables: a click (or Enter/Space) on a ``th`` of a ``table.sortable``
  sorts the rows by that column (numbers by the cell's ``data-v``, text
  otherwise), toggling ``aria-sort`` between ``descending`` and ``ascending``;
* filters: an ``input.filter[data-table=ID]`` hides the rows of table ``ID``
  whose first cell does not contain the text (case-insensitive), or match it when
  it is written ``/regex/``; the count next to it is updated;
* the flame graph: reads ``script#flame-data`` (JSON ``{"views": {name: node}}``,
  node ``{"n": name, "v": value, "c": [children]}``) and draws the selected view
  into ``svg#flame``; a click on a frame zooms to it, "Reset zoom" goes back.
"""

from __future__ import annotations

__all__ = ["CSS", "JS"]

CSS = """
:root {
  --bg: #ffffff; --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --card: #f6f8fa;
  --accent: #0969da; --cpu: #4e79a7; --acc: #f28e2b; --bad: #cf222e;
  --input: #e15759; --compute: #59a14f; --idle: #bab0ac;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #0d1117; --fg: #e6edf3; --muted: #9198a1; --line: #3d444d; --card: #151b23;
    --accent: #4493f8; --cpu: #6b9bd1; --acc: #f5a35c; --bad: #f85149;
  }
}
* { box-sizing: border-box; }
body {
  margin: 0; background: var(--bg); color: var(--fg);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial,
    sans-serif;
}
header, main, footer { max-width: 1360px; margin: 0 auto; padding: 0 20px; }
header { padding-top: 18px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 28px 0 8px; border-bottom: 1px solid var(--line); }
nav a { margin-right: 14px; color: var(--accent); text-decoration: none; }
.muted { color: var(--muted); }
code, .mono, td.name { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; margin: 12px 0; }
.card {
  background: var(--card); border: 1px solid var(--line); border-radius: 6px;
  padding: 8px 12px; min-width: 140px;
}
.card .k { font-size: 12px; color: var(--muted); }
.card .v { font-size: 18px; font-weight: 600; }
.tools { display: flex; gap: 10px; align-items: center; margin: 6px 0; }
input.filter {
  padding: 4px 8px; width: 320px; border: 1px solid var(--line); border-radius: 4px;
  background: var(--bg); color: var(--fg);
}
input.filter.invalid { border-color: var(--bad); }
.scroll { max-height: 480px; overflow: auto; border: 1px solid var(--line); border-radius: 6px; }
table.data { border-collapse: collapse; width: 100%; font-size: 13px; }
table.data th, table.data td {
  padding: 3px 8px; border-bottom: 1px solid var(--line); text-align: right; white-space: nowrap;
}
table.data th { white-space: normal; vertical-align: bottom; }
table.data td.wrap, table.data th.wrap {
  white-space: normal; overflow-wrap: anywhere; text-align: left;
}
table.data th.alloc { text-align: right; overflow-wrap: anywhere; }
table.fixed { table-layout: fixed; }
table.fixed col.c-num { width: 86px; }
table.fixed col.c-text { width: 200px; }
table.fixed col.c-short { width: 100px; }
table.fixed td { overflow: hidden; text-overflow: ellipsis; }
table.fixed td.text, table.data th.l { text-align: left; }
table.tree td.name { padding-left: calc(8px + var(--d, 0) * 14px); }
button.tw {
  border: 0; background: none; color: var(--muted); width: 16px; padding: 0; margin-right: 2px;
  cursor: pointer; font: inherit;
}
button.tw::before { content: "\\25B8"; }
button.tw[aria-expanded="true"]::before { content: "\\25BE"; }
span.tw-pad { display: inline-block; width: 18px; }
table.data th:first-child, table.data td:first-child { text-align: left; }
table.data td.name {
  white-space: pre; max-width: 520px; overflow: hidden; text-overflow: ellipsis;
}
table.fixed td.name { max-width: none; }
td.name span.stem {
  display: inline-block; max-width: calc(100% - 11ch - 20px); overflow: hidden;
  text-overflow: ellipsis; vertical-align: bottom;
}
td.name span.sfx { color: var(--muted); }
table.data thead th {
  position: sticky; top: 0; background: var(--card); cursor: pointer; user-select: none;
}
table.data th[aria-sort="ascending"]::after { content: " \\25B2"; }
table.data th[aria-sort="descending"]::after { content: " \\25BC"; }
table.data tbody tr:hover { background: var(--card); }
svg text { font-family: system-ui, sans-serif; }
.chart line { stroke: var(--line); }
.chart text { fill: var(--muted); font-size: 11px; }
.chart .cpu { fill: var(--cpu); }
.chart .acc { fill: var(--acc); }
.chart .input { fill: var(--input); }
.chart .compute { fill: var(--compute); }
.chart .idle { fill: var(--idle); }
.chart.memory { color: var(--acc); }
.chart .cut { stroke: var(--bg); stroke-width: 2; fill: none; }
.chart text.cutv, .chart text.outlier { fill: var(--bad); font-weight: 600; }
table.data tr.outlier td { color: var(--bad); }
.chart g.cutstep rect:not(.hatch) { opacity: 0.35; }
.chart .hatch { stroke: var(--muted); stroke-width: 1.5; fill: none; }
table.data tr.cutstep td { color: var(--muted); font-style: italic; }
.swatch.cutstep {
  background: repeating-linear-gradient(45deg, var(--muted) 0 2px, transparent 2px 4px);
}
.swatch.cpu { background: var(--cpu); }
.swatch.acc { background: var(--acc); }
.swatch.input { background: var(--input); }
.swatch.compute { background: var(--compute); }
.swatch.idle { background: var(--idle); }
#flame { width: 100%; display: block; border: 1px solid var(--line); border-radius: 6px; }
#flame rect { stroke: var(--bg); stroke-width: 0.5; cursor: pointer; }
#flame text { font-size: 12px; pointer-events: none; fill: #1f2328; }
.legend span { display: inline-block; margin-right: 14px; }
.swatch { display: inline-block; width: 10px; height: 10px; margin-right: 4px; }
dl.glossary dt { font-weight: 600; margin-top: 8px; }
dl.glossary dd { margin: 2px 0 0 18px; }
.slot { border: 1px dashed var(--line); border-radius: 6px; padding: 10px; }
ul.advice li { margin: 4px 0; white-space: pre-wrap; }
footer { margin: 32px auto 20px; font-size: 12px; color: var(--muted); }
"""

JS = r"""
(function () {
  "use strict";

  function cellValue(row, index, numeric) {
    var cell = row.cells[index];
    if (!cell) { return numeric ? -Infinity : ""; }
    if (numeric) {
      var v = parseFloat(cell.getAttribute("data-v"));
      return isNaN(v) ? -Infinity : v;
    }
    return (index === 0 && row.__name !== undefined ? row.__name : cell.textContent).toLowerCase();
  }

  function compareRows(index, numeric, sign) {
    return function (a, b) {
      var x = cellValue(a, index, numeric), y = cellValue(b, index, numeric);
      if (x < y) { return -sign; }
      if (x > y) { return sign; }
      return a.__order - b.__order;
    };
  }

  function sortBy(th) {
    var table = th.closest("table");
    var index = Array.prototype.indexOf.call(th.parentNode.children, th);
    var numeric = th.getAttribute("data-kind") !== "text";
    var current = th.getAttribute("aria-sort");
    var dir;
    if (current === "descending") { dir = "ascending"; }
    else if (current === "ascending") { dir = "descending"; }
    else { dir = numeric ? "descending" : "ascending"; }
    var sign = dir === "ascending" ? 1 : -1;
    table.querySelectorAll("thead th").forEach(function (other) {
      other.removeAttribute("aria-sort");
    });
    th.setAttribute("aria-sort", dir);
    var body = table.tBodies[0];
    if (table.classList.contains("tree")) {
      treeSort(table, compareRows(index, numeric, sign));
      return;
    }
    var rows = Array.prototype.slice.call(body.rows);
    rows.forEach(function (row, i) { row.__order = i; });
    rows.sort(compareRows(index, numeric, sign));
    rows.forEach(function (row) { body.appendChild(row); });
  }

  // Tree tables: rows in depth-first order, data-p = position of the parent row.
  function treeState(table) {
    if (table.__tree) { return table.__tree; }
    var rows = Array.prototype.slice.call(table.tBodies[0].rows), n = rows.length;
    var s = { rows: rows, parent: [], depth: [], kids: [], roots: [], open: [] };
    s.match = null; s.keep = null;
    var i, perDepth = [];
    for (i = 0; i < n; i++) { s.kids.push([]); }
    for (i = 0; i < n; i++) {
      var p = parseInt(rows[i].getAttribute("data-p"), 10);
      p = isNaN(p) || p < 0 || p >= i ? -1 : p;
      s.parent.push(p);
      s.depth.push(p >= 0 ? s.depth[p] + 1 : 0);
      if (p >= 0) { s.kids[p].push(i); } else { s.roots.push(i); }
      perDepth[s.depth[i]] = (perDepth[s.depth[i]] || 0) + 1;
      rows[i].__index = i; rows[i].__order = i;
      rows[i].__name = rows[i].cells[0].textContent;
    }
    // Open whole levels while at most 80 rows show.
    var level = 0, shown = perDepth[0] || 0;
    while (level + 1 < perDepth.length && shown + perDepth[level + 1] <= 80) {
      level++; shown += perDepth[level];
    }
    for (i = 0; i < n; i++) { s.open.push(s.depth[i] < level); }
    table.__tree = s;
    return s;
  }

  function treeRefresh(table) {
    var s = treeState(table), show = [];
    for (var i = 0; i < s.rows.length; i++) {
      var p = s.parent[i];
      if (s.match) { show.push(s.match[i] || s.keep[i]); }
      else { show.push(p < 0 || (show[p] && s.open[p])); }
      s.rows[i].hidden = !show[i];
      var button = s.rows[i].__button;
      if (button) { button.setAttribute("aria-expanded", String(s.match ? s.keep[i] : s.open[i])); }
    }
  }

  function treeSort(table, compare) {
    var s = treeState(table), body = table.tBodies[0];
    function place(list) {
      list.map(function (i) { return s.rows[i]; }).sort(compare).forEach(function (row) {
        body.appendChild(row);
        place(s.kids[row.__index]);
      });
    }
    place(s.roots);
  }

  function treeFilter(table, test, empty) {
    var s = treeState(table), n = s.rows.length, matched = 0;
    if (empty) { s.match = null; s.keep = null; treeRefresh(table); return n; }
    s.match = []; s.keep = [];
    for (var i = 0; i < n; i++) {
      s.match.push(test(s.rows[i].__name)); s.keep.push(false);
      if (s.match[i]) { matched++; }
    }
    for (i = n - 1; i >= 0; i--) {
      if ((s.match[i] || s.keep[i]) && s.parent[i] >= 0) { s.keep[s.parent[i]] = true; }
    }
    treeRefresh(table);
    return matched;
  }

  function initTrees() {
    document.querySelectorAll("table.tree").forEach(function (table) {
      var s = treeState(table);
      s.rows.forEach(function (row, i) {
        var cell = row.cells[0], mark;
        cell.style.setProperty("--d", s.depth[i]);
        if (s.kids[i].length) {
          mark = document.createElement("button");
          mark.type = "button"; mark.className = "tw";
          mark.setAttribute("aria-label", "open or close");
          row.__button = mark;
        } else {
          mark = document.createElement("span"); mark.className = "tw-pad";
        }
        cell.insertBefore(mark, cell.firstChild);
      });
      table.addEventListener("click", function (event) {
        var button = event.target.closest("button.tw");
        if (!button) { return; }
        var i = button.closest("tr").__index;
        if (s.match) { return; }
        s.open[i] = !s.open[i];
        treeRefresh(table);
      });
      table.addEventListener("mouseover", function (event) {
        var cell = event.target.closest("td.name");
        if (cell && !cell.title) { cell.title = cell.parentNode.__name; }
      });
      treeRefresh(table);
    });
    document.querySelectorAll("button.tree-all").forEach(function (button) {
      button.addEventListener("click", function () {
        var table = document.getElementById(button.getAttribute("data-table"));
        var s = treeState(table), open = button.getAttribute("data-open") === "1";
        for (var i = 0; i < s.open.length; i++) { s.open[i] = open; }
        treeRefresh(table);
      });
    });
  }

  function initSorting() {
    document.querySelectorAll("table.sortable thead th").forEach(function (th) {
      th.tabIndex = 0;
      th.addEventListener("click", function () { sortBy(th); });
      th.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") { event.preventDefault(); sortBy(th); }
      });
    });
  }

  function matcher(text) {
    var m = /^\/(.*)\/([a-z]*)$/.exec(text);
    if (m) {
      var re = new RegExp(m[1], m[2].indexOf("i") >= 0 ? m[2] : m[2] + "i");
      return function (s) { return re.test(s); };
    }
    var needle = text.toLowerCase();
    return function (s) { return s.toLowerCase().indexOf(needle) >= 0; };
  }

  function applyFilter(input) {
    var table = document.getElementById(input.getAttribute("data-table"));
    var count = document.getElementById(input.getAttribute("data-count"));
    var test;
    try { test = matcher(input.value); input.classList.remove("invalid"); }
    catch (err) { input.classList.add("invalid"); return; }
    if (table.classList.contains("tree")) {
      var hits = treeFilter(table, test, input.value === "");
      if (count) {
        count.textContent = input.value === "" ? table.tBodies[0].rows.length + " rows"
          : hits + " of " + table.tBodies[0].rows.length + " rows match";
      }
      return;
    }
    var shown = 0, rows = table.tBodies[0].rows;
    for (var i = 0; i < rows.length; i++) {
      var ok = test(rows[i].cells[0].textContent);
      rows[i].hidden = !ok;
      if (ok) { shown++; }
    }
    if (count) { count.textContent = shown + " of " + rows.length + " rows"; }
  }

  function initFilters() {
    document.querySelectorAll("input.filter").forEach(function (input) {
      input.addEventListener("input", function () { applyFilter(input); });
    });
  }

  function formatTime(us) {
    if (us < 1000) { return Math.round(us) + "us"; }
    if (us < 1e6) { return (us / 1e3).toFixed(2) + "ms"; }
    return (us / 1e6).toFixed(2) + "sec";
  }

  function hue(name) {
    var h = 0;
    for (var i = 0; i < name.length; i++) { h = (h * 31 + name.charCodeAt(i)) >>> 0; }
    return h;
  }

  var SVG = "http://www.w3.org/2000/svg";
  var ROW = 22, FLAME_MIN_HEIGHT = 260;

  function svgEl(tag, attrs) {
    var el = document.createElementNS(SVG, tag);
    Object.keys(attrs).forEach(function (k) { el.setAttribute(k, attrs[k]); });
    return el;
  }

  function depthOf(node) {
    var d = 0;
    (node.c || []).forEach(function (kid) { d = Math.max(d, depthOf(kid)); });
    return d + 1;
  }

  function Flame(data) {
    this.views = data.views || {};
    this.svg = document.getElementById("flame");
    this.select = document.getElementById("flame-view");
    this.info = document.getElementById("flame-info");
    this.view = Object.keys(this.views)[0];
    this.focus = null;
  }

  Flame.prototype.frame = function (node, x, w, depth, root, width) {
    var g = svgEl("g", {});
    var h = hue(node.n);
    var rect = svgEl("rect", {
      x: x.toFixed(2), y: depth * ROW, width: Math.max(w - 0.5, 0.5).toFixed(2),
      height: ROW - 1, fill: "hsl(" + (h % 55 + 5) + ", 75%, " + (58 + h % 14) + "%)"
    });
    var pct = root.v ? (100 * node.v / root.v).toFixed(2) : "0.00";
    var title = svgEl("title", {});
    title.textContent = node.n + "\n" + formatTime(node.v) + " (" + pct + "% of the root)";
    g.appendChild(title);
    g.appendChild(rect);
    if (w > 28) {
      var label = svgEl("text", { x: (x + 3).toFixed(2), y: depth * ROW + 15 });
      var chars = Math.floor((w - 6) / 7);
      var text = node.n;
      if (text.length > chars) { text = text.slice(0, Math.max(chars - 1, 1)) + "\u2026"; }
      label.textContent = text;
      g.appendChild(label);
    }
    var self = this;
    g.addEventListener("click", function () { self.zoom(node); });
    return g;
  };

  Flame.prototype.layout = function (node, x, w, depth, root, width, out) {
    if (w < 0.3) { return; }
    out.push(this.frame(node, x, w, depth, root, width));
    var kids = node.c || [], cx = x;
    for (var i = 0; i < kids.length; i++) {
      var kw = node.v ? w * kids[i].v / node.v : 0;
      this.layout(kids[i], cx, kw, depth + 1, root, width, out);
      cx += kw;
    }
  };

  Flame.prototype.path = function (root, target) {
    if (root === target) { return [root]; }
    var kids = root.c || [];
    for (var i = 0; i < kids.length; i++) {
      var p = this.path(kids[i], target);
      if (p) { return [root].concat(p); }
    }
    return null;
  };

  Flame.prototype.render = function () {
    var root = this.views[this.view];
    while (this.svg.firstChild) { this.svg.removeChild(this.svg.firstChild); }
    if (!root) { return; }
    var width = Math.max(this.svg.clientWidth || 0, 300);
    this.width = this.svg.clientWidth;
    var focus = this.focus || root;
    var chain = this.path(root, focus) || [root];
    var out = [];
    for (var i = 0; i < chain.length - 1; i++) {
      out.push(this.frame(chain[i], 0, width, i, root, width));
    }
    this.layout(focus, 0, width, chain.length - 1, root, width, out);
    var height = Math.max((chain.length - 1 + depthOf(focus)) * ROW + 2, FLAME_MIN_HEIGHT);
    this.svg.setAttribute("viewBox", "0 0 " + width + " " + height);
    // The element's box includes its 1px border (box-sizing: border-box).
    this.svg.setAttribute("height", height + 2);
    var svg = this.svg;
    out.forEach(function (el) { svg.appendChild(el); });
    this.info.textContent = focus.n + ": " + formatTime(focus.v);
  };

  Flame.prototype.zoom = function (node) { this.focus = node; this.render(); };

  Flame.prototype.init = function () {
    var self = this;
    if (this.select) {
      this.select.addEventListener("change", function () {
        self.view = self.select.value; self.focus = null; self.render();
      });
    }
    var reset = document.getElementById("flame-reset");
    if (reset) { reset.addEventListener("click", function () { self.zoom(null); }); }
    if (window.ResizeObserver) {
      new ResizeObserver(function () {
        if (self.svg.clientWidth !== self.width) { self.render(); }
      }).observe(this.svg);
    } else {
      window.addEventListener("resize", function () { self.render(); });
    }
    this.svg.setAttribute("preserveAspectRatio", "xMinYMin meet");
    this.render();
  };

  function initFlame() {
    var holder = document.getElementById("flame-data");
    if (!holder || !document.getElementById("flame")) { return; }
    var flame = new Flame(JSON.parse(holder.textContent));
    flame.init();
    window.tfprofFlame = flame;
  }

  document.addEventListener("DOMContentLoaded", function () {
    initSorting();
    initTrees();
    initFilters();
    initFlame();
  });
})();
"""
