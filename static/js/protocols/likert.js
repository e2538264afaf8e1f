// Likert / direct assessment: one output, a scale per criterion (annotate/protocols/likert.html).
// Everything else (number keys on the current row, sliders, drafts) is annotate.js's.
(function () {
  "use strict";
  window.Annotate.register("likert", {
    collect: function (unit) { return unit.scores(); }
  });
})();
