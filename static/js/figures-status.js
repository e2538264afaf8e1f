// Figures a worker computes (issue 45): polls the status of the figures this page shows (old, or
// not computed yet) and reloads the page once they reflect the campaign's current state.
(function () {
  "use strict";
  var box = document.querySelector("[data-figures-status]");
  if (!box) return;
  var url = box.getAttribute("data-status-url");
  var bar = box.querySelector("[data-figures-progress]");
  var label = box.querySelector("[data-figures-state]");
  var words = {queued: "queued", running: "computing", ready: "ready"};

  function show(status) {
    if (status.total) {
      bar.value = status.done / status.total;
      bar.textContent = status.done + " of " + status.total;
    }
    var text = words[status.state] || status.state;
    if (status.state === "running" && status.running_seconds !== null) text += " for " + status.running_seconds + " s";
    if (status.error) text += "; the last computation failed (" + status.error + ")";
    label.textContent = text;  // text, never HTML
  }

  function poll() {
    fetch(url, {headers: {Accept: "application/json"}, credentials: "same-origin"})
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (status) {
        if (status) show(status);
        if (status && status.ready) { window.location.reload(); return; }
        setTimeout(poll, 2000);
      })
      .catch(function () { setTimeout(poll, 5000); });
  }

  setTimeout(poll, 1000);
})();
