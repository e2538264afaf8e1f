// RankME (magnitude estimation): a number per output and criterion, the implied ranking shown
// live next to each number (annotate/protocols/rankme.html). Keys: Tab between the fields.
(function () {
  "use strict";
  function updateRanks(unit) {
    var form = unit.form;
    unit.config.criteria.forEach(function (criterion) {
      var entries = unit.config.outputs.map(function (output) {
        var name = "s-" + criterion.index + "-" + output.id;
        var input = form.querySelector('[name="' + name + '"]');
        var value = input && input.value !== "" ? Number(input.value) : NaN;
        return {name: name, value: value};
      });
      entries.forEach(function (entry) {
        var badge = form.querySelector('[data-rank-for="' + entry.name + '"]');
        if (!badge) return;
        if (isNaN(entry.value)) { badge.textContent = ""; return; }
        var rank = 1 + entries.filter(function (other) { return !isNaN(other.value) && other.value > entry.value; }).length;
        var tied = entries.filter(function (other) { return other.value === entry.value; }).length > 1;
        badge.textContent = "rank " + rank + (tied ? " (tie)" : "");
      });
    });
  }
  window.Annotate.register("rankme", {
    collect: function (unit) { return unit.scores(); },
    changed: updateRanks,
    ready: updateRanks
  });
})();
