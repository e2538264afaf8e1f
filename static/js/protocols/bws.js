// Best-worst scaling: the best and the worst output of a tuple per criterion
// (annotate/protocols/bws.html). Number keys pick in the current row: best, then worst.
(function () {
  "use strict";
  window.Annotate.register("bws", {
    collect: function (unit) {
      var judgements = [], missing = [];
      unit.config.criteria.forEach(function (criterion) {
        var best = unit.valueOf("b-" + criterion.index), worst = unit.valueOf("x-" + criterion.index);
        if (best === null) missing.push(criterion.name + ": best");
        if (worst === null) missing.push(criterion.name + ": worst");
        if (best !== null && worst !== null) {
          judgements.push({criterion: criterion.name, best: best, worst: worst});
        }
      });
      return {judgements: judgements, missing: missing};
    },
    // Said before sending; the server checks it too (the protocol's validation).
    check: function (result, unit) {
      if (result.judgements.some(function (j) { return j.best === j.worst; })) {
        unit.showErrors(["Best and worst must be different outputs."]);
        return false;
      }
      return true;
    }
  });
})();
