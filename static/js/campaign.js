// Researcher campaign page: refresh the progress numbers and tables every 10 seconds.
(function () {
  "use strict";
  var section = document.getElementById("progress");
  if (!section) return;
  var url = section.dataset.progressUrl;
  function cell(text, numeric) {
    var td = document.createElement("td");
    if (numeric) td.className = "num";
    td.textContent = text === null || text === undefined ? "–" : String(text);
    return td;
  }
  function fill(tableId, rows, columns) {
    var body = document.querySelector("#" + tableId + " tbody");
    if (!body || !rows.length) return;
    body.textContent = "";
    rows.forEach(function (row) {
      var tr = document.createElement("tr");
      columns.forEach(function (column, i) { tr.appendChild(cell(column(row), i > 0)); });
      body.appendChild(tr);
    });
  }
  function refresh() {
    fetch(url, {credentials: "same-origin"}).then(function (r) { return r.ok ? r.json() : null; }).then(function (data) {
      if (!data) return;
      section.querySelectorAll("[data-live]").forEach(function (node) {
        var value = node.dataset.live.split(".").reduce(function (obj, key) { return obj ? obj[key] : undefined; }, data);
        // null: not counted yet (a worker computes a large campaign's counts by status).
        if (value !== undefined && value !== null) node.textContent = String(value);
      });
      fill("annotator-table", data.annotators, [
        function (r) { return r.annotator; }, function (r) { return r.done; }, function (r) { return r.pending; },
        function (r) { return r.abandoned; }, function (r) { return r.median_seconds; }]);
      fill("system-table", data.systems, [
        function (r) { return r.system; }, function (r) { return r.units; }, function (r) { return r.complete; },
        function (r) { return r.percent + "%"; }]);
    }).catch(function () { /* try again at the next tick */ });
  }
  window.setInterval(refresh, 10000);
})();
