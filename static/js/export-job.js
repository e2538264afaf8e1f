// The export page: polls the job's API until the worker is done, then shows the download link.
(function () {
  "use strict";
  var box = document.getElementById("export-job");
  if (!box) return;
  var url = box.getAttribute("data-status-url");
  var field = function (name) { return box.querySelector('[data-field="' + name + '"]'); };
  var labels = {queued: "Queued", running: "Running", succeeded: "Succeeded", failed: "Failed"};

  function show(job) {
    field("status").textContent = labels[job.status] || job.status;
    var bar = field("progress");
    bar.value = job.progress;
    bar.textContent = Math.round(job.progress * 100) + "%";
    bar.hidden = job.status === "succeeded" || job.status === "failed";
    if (job.status === "failed") {
      var list = field("errors").querySelector("ul");
      list.textContent = "";
      job.errors.forEach(function (error) {
        var li = document.createElement("li");
        li.textContent = error;
        list.appendChild(li);
      });
      field("errors").hidden = false;
    }
    if (job.status === "succeeded") {
      var r = job.result || {};
      field("summary").textContent = r.judgements + " judgements, " + r.outputs + " outputs, " + r.items + " items.";
      if (job.download_url) field("download").href = job.download_url;
      field("done").hidden = false;
    }
    box.setAttribute("data-status", job.status);
  }

  function poll() {
    fetch(url, {headers: {Accept: "application/json"}, credentials: "same-origin"})
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (job) {
        if (job) show(job);
        if (!job || (job.status !== "succeeded" && job.status !== "failed")) setTimeout(poll, 1000);
      })
      .catch(function () { setTimeout(poll, 3000); });
  }

  var status = box.getAttribute("data-status");
  if (status !== "succeeded" && status !== "failed") poll();
})();
