// The import page: polls the job's API until the worker is done, and shows its progress.
(function () {
  "use strict";
  var box = document.getElementById("import-job");
  if (!box) return;
  var url = box.getAttribute("data-status-url");
  var field = function (name) { return box.querySelector('[data-field="' + name + '"]'); };
  var labels = {queued: "Queued", running: "Running", succeeded: "Succeeded", failed: "Failed"};
  var phases = {waiting: "Waiting for a worker", reading: "Reading and checking the file",
                writing: "Writing to the database", done: "Done"};

  function show(job) {
    field("status").textContent = labels[job.status] || job.status;
    field("phase").textContent = phases[job.phase] || job.phase;
    var bar = field("progress");
    bar.value = job.progress;
    bar.textContent = Math.round(job.progress * 100) + "%";
    bar.classList.toggle("indeterminate", job.status === "running" && job.phase === "writing");
    bar.hidden = job.status === "succeeded" || job.status === "failed";
    if (job.status === "failed") {
      var list = field("errors").querySelector("ul");
      list.textContent = "";
      job.errors.forEach(function (error) {
        var li = document.createElement("li");
        li.textContent = error;  // text, never HTML: errors quote the file
        list.appendChild(li);
      });
      field("error-count").textContent = job.errors.length;
      field("errors").hidden = false;
    }
    if (job.status === "succeeded") {
      var r = job.result || {};
      field("summary").textContent = r.items + " items, " + r.outputs + " outputs" +
        (r.unchanged ? " (already imported: nothing changed)." : ".");
      if (job.dataset_url) field("dataset-link").href = job.dataset_url;
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
