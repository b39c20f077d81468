"""The trace viewer's inline stylesheet and script (hand-written, no library).

The script, placed right after the canvas and its data, reads ``script#trace-data`` (the columns of
:func:`tfprof_lite.report.trace.trace_data`), decodes them into typed arrays
and draws the timeline on ``canvas#trace-canvas``: a time axis, a band with one slice
per step, then one lane per device with as many rows as it needs. Only the
events in view are visited (binary search per row); events narrower than a
pixel are merged, so 100k events draw in a few milliseconds.

Controls: mouse wheel zooms around the pointer (horizontal wheel pans), drag
pans, ``W``/``S`` or ``+``/``-`` zoom, ``A``/``D`` or the arrow keys pan, ``0``
shows everything; a click on a step slice zooms to that step; a click on an
event shows its name, op type, device, step, start, duration, inputs, output
shapes and consumers (for a GPU tracer record: kernel, launching op, op type,
device, step, start, duration) in ``#trace-details``. ``window.tfprofTrace`` exposes the
viewer (``range()``, ``zoomTo(a, b)``, ``find(name, step)``, ``box(i)``) and
``window.tfprofTraceFirstDraw`` the ``performance.now()`` of the first draw.
"""

from __future__ import annotations

__all__ = ["TRACE_CSS", "TRACE_JS"]

TRACE_CSS = """
.trace-wrap { position: relative; border: 1px solid var(--line); border-radius: 6px; }
#trace-canvas { display: block; width: 100%; cursor: grab; outline: none; }
#trace-canvas:focus-visible { box-shadow: 0 0 0 2px var(--accent); }
#trace-canvas.dragging { cursor: grabbing; }
.details {
  border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px; margin-top: 8px;
  background: var(--card); min-height: 48px; overflow-wrap: anywhere;
}
.details dl { display: grid; grid-template-columns: 110px 1fr; gap: 2px 12px; margin: 0; }
.details dt { color: var(--muted); }
.details dd { margin: 0; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
"""

TRACE_JS = r"""
(function () {
  "use strict";
  var ROW = 16, GAP = 8, AXIS = 22, BAND = 20, GUTTER = 170, MAX_H = 620, LANE_MIN = 30;

  function fmt(us) {
    var a = Math.abs(us);
    function trim(text) { return text.indexOf(".") < 0 ? text : text.replace(/\.?0+$/, ""); }
    if (a < 1000) { return trim(us.toFixed(1)) + "us"; }
    if (a < 1e6) { return trim((us / 1e3).toFixed(a < 1e4 ? 3 : 2)) + "ms"; }
    return trim((us / 1e6).toFixed(3)) + "s";
  }

  function hue(text) {
    var h = 7;
    for (var i = 0; i < text.length; i++) { h = (h * 31 + text.charCodeAt(i)) >>> 0; }
    return h % 360;
  }

  function shortDevice(dev) {
    var m = /device:([^/]+(?:\/.*)?)$/i.exec(dev) || /([^/]+\/[^/]+)$/.exec(dev);
    return m ? m[1] : dev;
  }

  function decode(d) {
    var n = 0, i, j, k;
    for (i = 0; i < d.laneCount.length; i++) { n += d.laneCount[i]; }
    var start = new Float64Array(n), dur = new Float64Array(n), node = new Int32Array(n);
    var laneOf = new Int32Array(n), tracks = [], lanes = [], base = 0, y = AXIS + BAND;
    var e = 0, t = 0, ref = 0, end = 0;
    for (i = 0; i < d.lanes.length; i++) {
      var lane = { dev: d.lanes[i].dev, kind: d.lanes[i].kind, rows: d.lanes[i].rows,
        y: y + GAP, first: tracks.length };
      y += GAP + Math.max(lane.rows * ROW, LANE_MIN);
      lanes.push(lane);
      for (j = 0; j < lane.rows; j++) { tracks.push({ lane: i, y: lane.y + j * ROW, n: 0 }); }
      t = 0;
      for (k = 0; k < d.laneCount[i]; k++, e++) {
        t += d.start[e]; ref += d.node[e];
        start[e] = t; dur[e] = d.dur[e]; node[e] = ref; laneOf[e] = i;
        if (t + d.dur[e] > end) { end = t + d.dur[e]; }
        tracks[lane.first + d.row[e]].n++;
      }
      base += d.laneCount[i];
    }
    tracks.forEach(function (tr) { tr.ev = new Int32Array(tr.n); tr.n = 0; });
    for (e = 0; e < n; e++) {
      var tr = tracks[lanes[laneOf[e]].first + d.row[e]];
      tr.ev[tr.n++] = e;
    }
    var names = new Array(d.nameSuf.length), prev = "";
    for (i = 0; i < names.length; i++) {
      prev = prev.slice(0, d.namePre[i]) + d.nameSuf[i];
      names[i] = prev;
    }
    var colors = d.ops.map(function (op) { return "hsl(" + hue(op) + ",58%,64%)"; });
    return { n: n, start: start, dur: dur, node: node, laneOf: laneOf, tracks: tracks,
      lanes: lanes, height: y + GAP, end: Math.max(end, 1), names: names, colors: colors };
  }

  function Trace(canvas, data, details) {
    this.canvas = canvas; this.data = data; this.details = details;
    this.ev = decode(data);
    this.a = 0; this.b = this.ev.end * 1.01; this.top = 0; this.sel = -1;
    this.height = Math.min(this.ev.height, MAX_H);
  }

  Trace.prototype.range = function () { return [this.a, this.b]; };
  Trace.prototype.plotW = function () {
    if (this.pw === undefined) { this.pw = Math.max(this.canvas.clientWidth - GUTTER, 50); }
    return this.pw;
  };
  Trace.prototype.x = function (t) {
    return GUTTER + (t - this.a) / (this.b - this.a) * this.plotW();
  };
  Trace.prototype.time = function (px) {
    return this.a + (px - GUTTER) / this.plotW() * (this.b - this.a);
  };

  Trace.prototype.zoomTo = function (a, b) {
    var total = this.ev.end * 1.01, span = Math.min(Math.max(b - a, 0.5), total);
    a = Math.min(Math.max(a, -total * 0.05), total - span * 0.5);
    this.a = a; this.b = a + span; this.draw();
  };

  Trace.prototype.zoomAt = function (px, factor) {
    var t = this.time(px);
    this.zoomTo(t - (t - this.a) * factor, t + (this.b - t) * factor);
  };

  Trace.prototype.pan = function (dpx, dpy) {
    var dt = dpx / this.plotW() * (this.b - this.a);
    this.top = Math.min(Math.max(this.top + dpy, 0), Math.max(this.ev.height - this.height, 0));
    this.zoomTo(this.a + dt, this.b + dt);
  };

  Trace.prototype.first = function (tr, t) {
    var lo = 0, hi = tr.n, ev = this.ev;
    while (lo < hi) {
      var mid = (lo + hi) >> 1, e = tr.ev[mid];
      if (ev.start[e] + ev.dur[e] < t) { lo = mid + 1; } else { hi = mid; }
    }
    return lo;
  };

  Trace.prototype.drawTrack = function (ctx, tr) {
    var ev = this.ev, y = tr.y - this.top, from = -1, to = -1;
    if (y + ROW < AXIS + BAND || y > this.height) { return; }
    function flush() {
      if (from >= 0) { ctx.fillStyle = "#8c959f"; ctx.fillRect(from, y + 1, to - from, ROW - 2); }
      from = -1;
    }
    ctx.font = "11px system-ui, sans-serif";
    for (var i = this.first(tr, this.a); i < tr.n; i++) {
      var e = tr.ev[i];
      if (ev.start[e] > this.b) { break; }
      var x0 = this.x(ev.start[e]), x1 = this.x(ev.start[e] + ev.dur[e]);
      if (x1 - x0 < 1) {
        if (from >= 0 && x0 <= to + 1) { to = Math.max(to, x0 + 1); continue; }
        flush(); from = x0; to = x0 + 1;
        continue;
      }
      flush();
      ctx.fillStyle = ev.colors[this.data.nodeOp[ev.node[e]]];
      ctx.fillRect(x0, y + 1, x1 - x0, ROW - 2);
      if (x1 - x0 > 30) {
        ctx.fillStyle = "#1f2328";
        var name = ev.names[ev.node[e]], room = Math.floor((x1 - x0 - 6) / 6);
        if (name.length > room) { name = name.slice(0, Math.max(room - 1, 1)) + "\u2026"; }
        ctx.fillText(name, Math.max(x0, GUTTER) + 3, y + ROW - 4);
      }
    }
    flush();
  };

  Trace.prototype.ticks = function () {
    var span = this.b - this.a, raw = span / 8, p = Math.pow(10, Math.floor(Math.log10(raw)));
    var step = [1, 2, 5, 10].map(function (m) { return m * p; })
      .filter(function (s) { return s >= raw; })[0];
    var out = [];
    for (var t = Math.ceil(this.a / step) * step; t <= this.b; t += step) { out.push(t); }
    return out;
  };

  Trace.prototype.drawFrame = function (ctx, w) {
    var css = getComputedStyle(document.documentElement), self = this;
    var line = css.getPropertyValue("--line") || "#d1d9e0";
    var muted = css.getPropertyValue("--muted") || "#59636e";
    ctx.fillStyle = muted; ctx.strokeStyle = line; ctx.font = "11px system-ui, sans-serif";
    this.ticks().forEach(function (t) {
      var x = self.x(t);
      ctx.fillRect(x, AXIS - 5, 1, 5);
      if (x < w - 60) { ctx.fillText(fmt(t), x + 2, AXIS - 8); }
      ctx.globalAlpha = 0.25; ctx.fillRect(x, AXIS, 1, self.height); ctx.globalAlpha = 1;
    });
    this.data.steps.forEach(function (s) {
      var x0 = Math.max(self.x(s[1]), GUTTER), x1 = Math.min(self.x(s[2]), w);
      if (x1 <= x0) { return; }
      ctx.fillStyle = "rgba(9,105,218,0.18)"; ctx.fillRect(x0, AXIS + 2, x1 - x0, BAND - 4);
      ctx.fillStyle = muted;
      if (x1 - x0 > 40) { ctx.fillText("step " + s[0], x0 + 4, AXIS + BAND - 6); }
    });
  };

  Trace.prototype.drawLanes = function (ctx, w) {
    var self = this, css = getComputedStyle(document.documentElement);
    var fg = css.getPropertyValue("--fg") || "#1f2328";
    this.ev.lanes.forEach(function (lane) {
      var y = lane.y - self.top;
      ctx.fillStyle = css.getPropertyValue("--line") || "#d1d9e0";
      ctx.fillRect(0, y - GAP / 2, w, 1);
      ctx.fillStyle = fg; ctx.font = "12px system-ui, sans-serif";
      ctx.fillText(shortDevice(lane.dev), 6, y + 12, GUTTER - 12);
      ctx.font = "10px system-ui, sans-serif";
      var rows = lane.rows + " row" + (lane.rows === 1 ? "" : "s");
      ctx.fillText(lane.kind + ", " + rows, 6, y + 25, GUTTER - 12);
    });
  };

  Trace.prototype.draw = function () {
    var c = this.canvas, dpr = window.devicePixelRatio || 1, w = c.clientWidth;
    this.pw = Math.max(w - GUTTER, 50);  // read the layout once per draw, not per event
    if (c.width !== Math.round(w * dpr) || c.height !== Math.round(this.height * dpr)) {
      c.width = Math.round(w * dpr); c.height = Math.round(this.height * dpr);
      c.style.height = this.height + "px";
    }
    var ctx = c.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, this.height);
    ctx.save();
    ctx.beginPath(); ctx.rect(GUTTER, AXIS + BAND, w - GUTTER, this.height); ctx.clip();
    for (var i = 0; i < this.ev.tracks.length; i++) { this.drawTrack(ctx, this.ev.tracks[i]); }
    if (this.sel >= 0) {
      var box = this.box(this.sel);
      ctx.strokeStyle = "#cf222e"; ctx.lineWidth = 2;
      ctx.strokeRect(box.x - 1, box.y, Math.max(box.w, 1) + 2, box.h);
    }
    ctx.restore();
    this.drawFrame(ctx, w);
    ctx.save();
    ctx.beginPath(); ctx.rect(0, AXIS + BAND, w, this.height); ctx.clip();
    this.drawLanes(ctx, w);
    ctx.restore();
    if (window.tfprofTraceFirstDraw === undefined) {
      window.tfprofTraceFirstDraw = performance.now();
    }
  };

  Trace.prototype.box = function (e) {
    var ev = this.ev, tr = ev.tracks[ev.lanes[ev.laneOf[e]].first + this.data.row[e]];
    var x0 = this.x(ev.start[e]), x1 = this.x(ev.start[e] + ev.dur[e]);
    return { x: x0, y: tr.y - this.top + 1, w: x1 - x0, h: ROW - 2 };
  };

  Trace.prototype.find = function (name, step) {
    var ev = this.ev, s = this.data.steps.filter(function (x) { return x[0] === step; })[0];
    for (var e = 0; e < ev.n; e++) {
      var inStep = !s || (ev.start[e] >= s[1] && ev.start[e] <= s[2]);
      if (inStep && ev.names[ev.node[e]] === name) { return e; }
    }
    return -1;
  };

  Trace.prototype.hit = function (px, py) {
    var ev = this.ev, t = this.time(px), slack = 2 / this.plotW() * (this.b - this.a);
    for (var i = 0; i < ev.tracks.length; i++) {
      var tr = ev.tracks[i], y = tr.y - this.top, near = -1;
      if (py < y || py >= y + ROW) { continue; }
      for (var j = this.first(tr, t - slack); j < tr.n; j++) {
        var e = tr.ev[j];
        if (ev.start[e] > t + slack) { break; }
        if (ev.start[e] <= t && ev.start[e] + ev.dur[e] >= t) { return e; }
        if (near < 0) { near = e; }
      }
      return near;
    }
    return -1;
  };

  Trace.prototype.stepAt = function (px, py) {
    if (py < AXIS || py > AXIS + BAND) { return null; }
    var t = this.time(px);
    return this.data.steps.filter(function (s) { return t >= s[1] && t <= s[2]; })[0] || null;
  };

  Trace.prototype.consumers = function (i) {
    if (!this.users) {
      var users = this.users = this.data.inputs.map(function () { return []; });
      this.data.inputs.forEach(function (ins, k) {
        ins.forEach(function (j) { if (j >= 0) { users[j].push(k); } });
      });
    }
    return this.users[i];
  };

  Trace.prototype.launcher = function (i) {
    if (!this.launchers) {
      var map = this.launchers = {};
      (this.data.kernels || []).forEach(function (k) { map[k[0]] = k[1]; });
    }
    return Object.prototype.hasOwnProperty.call(this.launchers, i) ? this.launchers[i] : null;
  };

  Trace.prototype.select = function (e) {
    this.sel = e; this.draw();
    var box = this.details;
    while (box.firstChild) { box.removeChild(box.firstChild); }
    if (e < 0) { box.textContent = "Click an event to see its details."; return; }
    var ev = this.ev, d = this.data, i = ev.node[e], self = this;
    var step = d.steps.filter(function (s) {
      return ev.start[e] >= s[1] && ev.start[e] <= s[2];
    })[0];
    var into = step ? "+" + fmt(ev.start[e] - step[1]) + " into the step, " : "";
    var name = function (j) { return j >= 0 ? ev.names[j] : d.extIn[-1 - j]; };
    var lane = ev.lanes[ev.laneOf[e]], launcher = self.launcher(i);
    var rows = [[launcher === null ? "Name" : "Kernel", ev.names[i]]];
    if (launcher !== null) { rows.push(["Launched by", launcher || "not annotated"]); }
    rows.push(
      ["Op type", d.ops[d.nodeOp[i]]],
      ["Device", lane.dev + " (" + lane.kind + " time)"],
      ["Step", step ? String(step[0]) : "none (outside the steps)"],
      ["Start", into + fmt(ev.start[e]) + " on the timeline"],
      ["Duration", fmt(ev.dur[e])]
    );
    if (launcher === null) {
      rows.push(
        ["Inputs", d.inputs[i].map(name).join(", ") || "none recorded"],
        ["Output shapes", d.shapes[i].split(";").join(", ") || "not recorded"],
        ["Consumers", self.consumers(i).map(name).join(", ") || "none that ran"]
      );
    }
    var dl = document.createElement("dl");
    rows.forEach(function (r) {
      var dt = document.createElement("dt"), dd = document.createElement("dd");
      dt.textContent = r[0]; dd.textContent = r[1]; dl.appendChild(dt); dl.appendChild(dd);
    });
    box.appendChild(dl);
  };

  Trace.prototype.init = function () {
    var c = this.canvas, self = this, down = null;
    c.addEventListener("wheel", function (event) {
      event.preventDefault();
      var r = c.getBoundingClientRect(), px = event.clientX - r.left;
      if (Math.abs(event.deltaX) > Math.abs(event.deltaY)) { self.pan(event.deltaX, 0); return; }
      self.zoomAt(Math.max(px, GUTTER), Math.pow(1.0015, event.deltaY));
    }, { passive: false });
    c.addEventListener("mousedown", function (event) {
      down = { x: event.clientX, y: event.clientY, lx: event.clientX, ly: event.clientY };
      down.moved = false;
      c.classList.add("dragging");
    });
    window.addEventListener("mousemove", function (event) {
      if (!down) { return; }
      var dx = event.clientX - down.lx, dy = event.clientY - down.ly;
      down.lx = event.clientX; down.ly = event.clientY;
      var far = Math.abs(event.clientX - down.x) + Math.abs(event.clientY - down.y);
      if (far > 3) { down.moved = true; }
      if (down.moved) { self.pan(-dx, -dy); }
    });
    window.addEventListener("mouseup", function (event) {
      if (!down) { return; }
      var moved = down.moved;
      down = null; c.classList.remove("dragging");
      if (moved || event.target !== c) { return; }
      var r = c.getBoundingClientRect(), px = event.clientX - r.left, py = event.clientY - r.top;
      var step = self.stepAt(px, py);
      if (step) { self.zoomTo(step[1], step[2]); return; }
      self.select(self.hit(px, py));
    });
    c.addEventListener("keydown", function (event) {
      var mid = GUTTER + self.plotW() / 2, k = event.key;
      if (k === "w" || k === "+" || k === "=") { self.zoomAt(mid, 0.7); }
      else if (k === "s" || k === "-") { self.zoomAt(mid, 1 / 0.7); }
      else if (k === "a" || k === "ArrowLeft") { self.pan(-self.plotW() * 0.2, 0); }
      else if (k === "d" || k === "ArrowRight") { self.pan(self.plotW() * 0.2, 0); }
      else if (k === "ArrowUp") { self.pan(0, -ROW * 3); }
      else if (k === "ArrowDown") { self.pan(0, ROW * 3); }
      else if (k === "0") { self.zoomTo(0, self.ev.end * 1.01); }
      else { return; }
      event.preventDefault();
    });
    c.addEventListener("mousemove", function (event) {
      if (down) { return; }
      var r = c.getBoundingClientRect();
      var e = self.hit(event.clientX - r.left, event.clientY - r.top);
      c.title = e < 0 ? "" : self.ev.names[self.ev.node[e]] + " (" + fmt(self.ev.dur[e]) + ")";
    });
    var reset = document.getElementById("trace-reset");
    if (reset) {
      reset.addEventListener("click", function () {
        self.top = 0; self.zoomTo(0, self.ev.end * 1.01);
      });
    }
    if (window.ResizeObserver) { new ResizeObserver(function () { self.draw(); }).observe(c); }
    this.draw();
  };

  // This script follows the canvas and its data in the page, so the timeline is
  // drawn (and usable) while the rest of the page is still being parsed.
  var holder = document.getElementById("trace-data");
  var canvas = document.getElementById("trace-canvas");
  if (!holder || !canvas) { return; }
  var details = document.getElementById("trace-details");
  var trace = new Trace(canvas, JSON.parse(holder.textContent), details);
  window.tfprofTrace = trace;
  trace.init();
})();
"""
