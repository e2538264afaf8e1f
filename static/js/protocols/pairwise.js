// Side-by-side pairwise preference: A / tie / B per criterion (annotate/protocols/pairwise.html).
// The keys A, T and B pick in the current row (annotate.js's row keys, from each radio's data-key).
(function () {
  "use strict";
  window.Annotate.register("pairwise", {
    collect: function (unit) {
      var judgements = [], missing = [];
      unit.config.criteria.forEach(function (criterion) {
        var winner = unit.valueOf("w-" + criterion.index);
        if (winner === null) missing.push(criterion.name);
        else judgements.push({criterion: criterion.name, winner: winner});
      });
      return {judgements: judgements, missing: missing};
    }
  });
})();
