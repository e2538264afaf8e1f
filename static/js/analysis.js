// Analysis plots (Plotly, served from static/vendor). Data comes from json_script
// elements; every point of the scatter links to its item. No inline script (CSP).
(function () {
  "use strict";

  var PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
                 "#7f7f7f", "#bcbd22"];

  function read(id) {
    var el = document.getElementById(id);
    return el ? JSON.parse(el.textContent) : null;
  }

  // Plotly renders a subset of HTML in every label (<a href>, <b>, <br>): a system called
  // '<a href="https://evil">x</a>' would be a live link in the legend and on the axis. Every
  // string from the data goes through here; Plotly turns the entities back into characters.
  // "%{" is broken too, so a name cannot pull other fields into a hover template.
  function esc(value) {
    // (Quotes stay: with "<" escaped no attribute can open, and Plotly has no &quot;.)
    return String(value).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
      .replace(/%\{/g, "%&#123;");
  }

  function layout(extra) {
    var narrow = window.innerWidth < 600;
    var base = {
      margin: { l: narrow ? 48 : 64, r: 12, t: 16, b: narrow ? 90 : 64 },
      hovermode: "closest",
      legend: narrow ? { orientation: "h", y: -0.35 } : {},
      font: { size: narrow ? 11 : 13 },
      autosize: true
    };
    for (var k in extra) { base[k] = extra[k]; }
    return base;
  }

  function scatter(el, data) {
    var bySystem = {};
    data.points.forEach(function (p) { (bySystem[p.system] = bySystem[p.system] || []).push(p); });
    var traces = Object.keys(bySystem).sort().map(function (name, i) {
      var pts = bySystem[name];
      return {
        type: "scatter", mode: "markers", name: esc(name),
        x: pts.map(function (p) { return p.metric; }),
        y: pts.map(function (p) { return p.human; }),
        customdata: pts.map(function (p) { return p.url; }),
        text: pts.map(function (p) { return esc(p.item + " · " + p.system); }),
        hovertemplate: "%{text}<br>" + esc(data.metric) + " %{x:.3f}<br>human %{y:.2f}<extra></extra>",
        marker: { size: 8, opacity: 0.8, color: PALETTE[i % PALETTE.length] }
      };
    });
    var dir = data.higher_is_better ? "higher is better" : "lower is better";
    Plotly.newPlot(el, traces, layout({
      xaxis: { title: { text: esc(data.metric) + " (" + dir + ")" }, zeroline: false },
      yaxis: { title: { text: "human " + esc(data.criterion) + " (mean rating, higher is better)" }, zeroline: false }
    }), { responsive: true, displaylogo: false });
    el.on("plotly_click", function (ev) {
      var url = ev.points && ev.points[0] && ev.points[0].customdata;
      if (url) { window.location.href = url; }
    });
  }

  function rankings(el, panels) {
    var traces = panels.map(function (p, i) {
      return {
        type: "scatter", mode: "markers", name: esc(p.label),
        x: p.systems.map(esc), y: p.scores,
        text: p.clusters.map(function (c) { return "cluster " + c; }),
        error_y: {
          type: "data", symmetric: false,
          array: p.hi.map(function (h, k) { return h === null ? 0 : h - p.scores[k]; }),
          arrayminus: p.lo.map(function (l, k) { return l === null ? 0 : p.scores[k] - l; })
        },
        hovertemplate: "%{x}: %{y:.3f} (%{text})<extra>" + esc(p.label) + "</extra>",
        marker: { size: 10, color: PALETTE[i % PALETTE.length] }
      };
    });
    Plotly.newPlot(el, traces, layout({
      xaxis: { title: { text: "system (best first)" }, type: "category" },
      yaxis: { title: { text: "human score (higher is better), 95% interval" } }
    }), { responsive: true, displaylogo: false });
  }

  function init() {
    if (typeof Plotly === "undefined") { return; }  // the tables below stay as the fallback
    document.querySelectorAll("[data-plot]").forEach(function (el) {
      var data = read(el.getAttribute("data-source"));
      if (!data) { return; }
      if (el.getAttribute("data-plot") === "scatter") { scatter(el, data); }
      if (el.getAttribute("data-plot") === "rankings") { rankings(el, data); }
      el.setAttribute("data-rendered", "true");
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
