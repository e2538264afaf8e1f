// The export page: the job's progress (job-progress.js), then the download link.
(function () {
  "use strict";
  var box = document.getElementById("export-job");
  if (!box) return;
  window.WorkbenchJob.watch(box, function (job, field) {
    if (job.status !== "succeeded") return;
    var r = job.result || {};
    field("summary").textContent = r.judgements + " judgements, " + r.outputs + " outputs, " + r.items + " items.";
    if (job.download_url) field("download").href = job.download_url;
  });
})();
