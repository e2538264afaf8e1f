// The export page: the job's progress (job-progress.js), then the download link.
(function () {
  "use strict";
  var box = document.getElementById("export-job");
  if (!box) return;
  window.WorkbenchJob.watch(box, function (job, field) {
    // Why it has not started yet (a worker of its queue busy with earlier tasks), as text.
    var waiting = field("waiting");
    waiting.textContent = job.waiting || "";
    waiting.hidden = !job.waiting;
    if (job.status !== "succeeded") return;
    var r = job.result || {};
    field("summary").textContent = r.judgements + " judgements, " + r.outputs + " outputs, " + r.items + " items.";
    if (job.download_url) field("download").href = job.download_url;
  });
})();
