"""The dashboard's HTML page: styles and a small inline script that draws SVG charts.

Kept free of any external resource (no CDN, no fonts) so the page opens from a CI
artifact or a file:// URL offline. The script renders every chart into the DOM --
one ``<path class="series" data-series=ID>`` per benchmark, a legend entry with the
benchmark's name -- and only then adds ``#dashboard-ready``; a script error is shown
in ``#dashboard-errors`` instead. Tests load the page in headless Chromium and look
for exactly these.
"""

from __future__ import annotations

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.1em; margin: 1.6em 0 .4em; }
#dashboard-errors { color: #b00; white-space: pre-wrap; }
#filter { width: 24em; padding: .3em; }
svg.chart { border: 1px solid #ddd; background: #fff; }
svg .axis { stroke: #888; stroke-width: 1; }
svg .grid { stroke: #eee; stroke-width: 1; }
svg .reference { stroke: #999; stroke-dasharray: 4 3; }
svg text { font-size: 11px; fill: #555; }
svg path.series { fill: none; stroke-width: 2; }
.hidden { display: none; }
ul.legend { list-style: none; padding: 0; columns: 2; font-size: 12px; }
ul.legend li { cursor: pointer; } ul.legend li.off { opacity: .35; }
ul.legend .swatch { display: inline-block; width: 1em; height: .7em; margin-right: .4em; }
"""

# Registered before the main script so that its errors are caught and shown.
ERROR_HOOK = """
window.addEventListener("error", function (e) {
  var box = document.getElementById("dashboard-errors");
  box.textContent += "script error: " + e.message + "\\n";
});
"""

SCRIPT = r"""
"use strict";
(function () {
  const SVG_NS = "http://www.w3.org/2000/svg";
  const WIDTH = 760, HEIGHT = 280;
  const MARGIN = { left: 70, right: 56, top: 14, bottom: 30 };
  const data = JSON.parse(document.getElementById("bench-data").textContent);
  const commits = data.commits;

  function svg(tag, attrs, parent) {
    const e = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (parent) parent.appendChild(e);
    return e;
  }

  function html(tag, attrs, parent, text) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }

  // A benchmark keeps its colour in every chart: the hue comes from its ID.
  function colour(id) {
    let h = 0;
    for (const c of id.split("/")[0]) h = (h * 31 + c.charCodeAt(0)) >>> 0;
    return "hsl(" + (h % 360) + ", 65%, 42%)";
  }

  function formatNumber(v) {
    if (v === 0) return "0";
    const a = Math.abs(v);
    if (a >= 1e4 || a < 1e-3) return v.toExponential(2);
    return String(Number(v.toPrecision(3)));
  }

  function yScale(chart) {
    const usable = (v) => v !== null && (!chart.log || v > 0);
    const values = chart.series.flatMap((s) => s.values).filter(usable);
    if (chart.reference !== undefined) values.push(chart.reference);
    const f = chart.log ? Math.log10 : (v) => v;
    let lo = f(Math.min(...values)), hi = f(Math.max(...values));
    if (lo === hi) {
      const pad = chart.log ? 0.3 : Math.max(1, Math.abs(lo) * 0.1);
      lo -= pad; hi += pad;
    }
    const span = hi - lo;
    lo -= span * 0.05; hi += span * 0.05;
    const inner = HEIGHT - MARGIN.top - MARGIN.bottom;
    return {
      usable: usable,
      y: (v) => MARGIN.top + inner * (1 - (f(v) - lo) / (hi - lo)),
      ticks: [0, 1, 2, 3, 4].map((i) => {
        const t = lo + ((hi - lo) * i) / 4;
        return chart.log ? Math.pow(10, t) : t;
      }),
    };
  }

  function xOf(i) {
    const inner = WIDTH - MARGIN.left - MARGIN.right;
    return MARGIN.left + (commits.length === 1 ? inner / 2 : (inner * i) / (commits.length - 1));
  }

  function drawAxes(root, scale, chart) {
    for (const t of scale.ticks) {
      const y = scale.y(t);
      svg("line", { class: "grid", x1: MARGIN.left, x2: WIDTH - MARGIN.right, y1: y, y2: y }, root);
      svg("text", { x: MARGIN.left - 6, y: y + 4, "text-anchor": "end" }, root).textContent = formatNumber(t);
    }
    if (chart.reference !== undefined) {
      const y = scale.y(chart.reference);
      svg("line", { class: "reference", x1: MARGIN.left, x2: WIDTH - MARGIN.right, y1: y, y2: y }, root);
    }
    const bottom = HEIGHT - MARGIN.bottom;
    svg("line", { class: "axis", x1: MARGIN.left, x2: WIDTH - MARGIN.right, y1: bottom, y2: bottom }, root);
    svg("line", { class: "axis", x1: MARGIN.left, x2: MARGIN.left, y1: MARGIN.top, y2: bottom }, root);
    const every = Math.max(1, Math.ceil(commits.length / 7));  // labels must not overlap
    commits.forEach((c, i) => {
      if (i % every !== 0) return;
      svg("text", { x: xOf(i), y: bottom + 16, "text-anchor": "middle" }, root).textContent = c.key;
    });
  }

  function drawSeries(root, scale, chart, s) {
    const g = svg("g", { class: "series-group", "data-series": s.id }, root);
    let d = "", pen = "M";
    s.values.forEach((v, i) => {
      if (!scale.usable(v)) { pen = "M"; return; }
      d += pen + xOf(i).toFixed(1) + " " + scale.y(v).toFixed(1) + " ";
      pen = "L";
      const dot = svg("circle", { cx: xOf(i), cy: scale.y(v), r: 3, fill: colour(s.id) }, g);
      svg("title", {}, dot).textContent = s.name + "\n" + commits[i].key + ": " + formatNumber(v);
    });
    svg("path", { class: "series", "data-series": s.id, d: d.trim(), stroke: colour(s.id) }, g);
  }

  function drawLegend(section, chart) {
    const list = html("ul", { class: "legend" }, section);
    for (const s of chart.series) {
      const item = html("li", { "data-series": s.id, "data-name": s.name.toLowerCase() }, list);
      html("span", { class: "swatch", style: "background:" + colour(s.id) }, item);
      html("span", { class: "series-name" }, item, s.name);
      item.addEventListener("click", () => {
        item.classList.toggle("off");
        section.querySelector('g[data-series="' + CSS.escape(s.id) + '"]').classList.toggle("hidden");
      });
    }
  }

  function drawChart(root, chart) {
    const section = html("section", { class: "chart-section", "data-chart": chart.id }, root);
    html("h2", {}, section, chart.title + (chart.log ? " (log scale)" : ""));
    const plot = svg("svg", { class: "chart", width: WIDTH, height: HEIGHT,
                              viewBox: "0 0 " + WIDTH + " " + HEIGHT }, section);
    const scale = yScale(chart);
    drawAxes(plot, scale, chart);
    for (const s of chart.series) drawSeries(plot, scale, chart, s);
    drawLegend(section, chart);
  }

  function applyFilter(text) {
    const q = text.trim().toLowerCase();
    for (const item of document.querySelectorAll("ul.legend li")) {
      const hide = q !== "" && !item.dataset.name.includes(q);
      item.classList.toggle("hidden", hide);
      const section = item.closest("section");
      const group = section.querySelector('g[data-series="' + CSS.escape(item.dataset.series) + '"]');
      group.classList.toggle("hidden", hide || item.classList.contains("off"));
    }
  }

  const root = document.getElementById("charts");
  const seriesCount = data.charts.reduce((n, c) => n + c.series.length, 0);
  document.getElementById("summary").textContent =
    commits.length + " commit(s), " + data.charts.length + " chart(s), " + seriesCount + " series. " +
    "Hover a point for its value; click a legend entry to hide its series.";
  for (const chart of data.charts) drawChart(root, chart);
  document.getElementById("filter").addEventListener("input", (e) => applyFilter(e.target.value));
  html("div", { id: "dashboard-ready", "data-charts": data.charts.length, "data-series": seriesCount,
                class: "hidden" }, document.body, "rendered");
})();
"""

TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>tilegraph benchmarks</title>
<style>{style}</style>
<script>{error_hook}</script>
</head>
<body>
<h1>tilegraph benchmarks</h1>
<p id="summary">The charts need JavaScript.</p>
<p><input id="filter" type="search" placeholder="filter benchmarks by name"></p>
<div id="dashboard-errors"></div>
<div id="charts"></div>
<script type="application/json" id="bench-data">{data}</script>
<script>{script}</script>
</body>
</html>
"""


def render_page(data_json: str) -> str:
    """The page with DATA_JSON inlined. ``</`` is escaped so no benchmark name can
    close the data's script element early."""
    return TEMPLATE.format(style=STYLE, error_hook=ERROR_HOOK, script=SCRIPT, data=data_json.replace("</", "<\\/"))
