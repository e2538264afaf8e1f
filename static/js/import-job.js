// The import page: the job's progress (job-progress.js) with its phase, then a link to the dataset.
(function () {
  "use strict";
  var box = document.getElementById("import-job");
  if (!box) return;
  var phases = {waiting: "Waiting for a worker", reading: "Reading and checking the file",
                writing: "Writing to the database", done: "Done"};
  window.WorkbenchJob.watch(box, function (job, field) {
    field("phase").textContent = phases[job.phase] || job.phase;
    field("phase-line").hidden = job.status === "succeeded" || job.status === "failed";
    // Writing has no row count to report: the bar moves without a value.
    field("progress").classList.toggle("indeterminate", job.status === "running" && job.phase === "writing");
    if (job.status === "failed") field("error-count").textContent = job.errors.length;
    if (job.status !== "succeeded") return;
    var r = job.result || {};
    if (job.kind === "judgements") {
      // Refused lines (skip invalid lines) are listed by the page itself: reload once to show them.
      if (r.skipped_lines && !document.getElementById("import-skipped")) { window.location.reload(); return; }
      field("summary").textContent = r.judgements + " judgements (" + r.created + " new)" +
        (r.unchanged ? " (already imported: nothing changed)." : ".");
      return;
    }
    field("summary").textContent = r.items + " items, " + r.outputs + " outputs" +
      (r.unchanged ? " (already imported: nothing changed)." : ".");
    if (job.dataset_url) field("dataset-link").href = job.dataset_url;
  });
})();
