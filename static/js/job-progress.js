// Shared by the import and export job pages: shows a background job's status,
// progress bar and errors, and polls its API until the worker is done.
// A page calls WorkbenchJob.watch(box, onUpdate) for what only it shows.
(function () {
  "use strict";
  var labels = {queued: "Queued", running: "Running", succeeded: "Succeeded", failed: "Failed"};
  var finished = function (status) { return status === "succeeded" || status === "failed"; };

  function watch(box, onUpdate) {
    var url = box.getAttribute("data-status-url");
    var field = function (name) { return box.querySelector('[data-field="' + name + '"]'); };

    function show(job) {
      field("status").textContent = labels[job.status] || job.status;
      var bar = field("progress");
      bar.value = job.progress;
      bar.textContent = Math.round(job.progress * 100) + "%";
      bar.hidden = finished(job.status);
      if (job.status === "failed") {
        var list = field("errors").querySelector("ul");
        list.textContent = "";
        job.errors.forEach(function (error) {
          var li = document.createElement("li");
          li.textContent = error;  // text, never HTML: errors quote the user's file
          list.appendChild(li);
        });
        field("errors").hidden = false;
      }
      onUpdate(job, field);
      if (job.status === "succeeded") field("done").hidden = false;
      box.setAttribute("data-status", job.status);
    }

    function poll() {
      fetch(url, {headers: {Accept: "application/json"}, credentials: "same-origin"})
        .then(function (response) { return response.ok ? response.json() : null; })
        .then(function (job) {
          if (job) show(job);
          if (!job || !finished(job.status)) setTimeout(poll, 1000);
        })
        .catch(function () { setTimeout(poll, 3000); });
    }

    if (!finished(box.getAttribute("data-status"))) poll();
  }

  window.WorkbenchJob = {watch: watch};
})();
