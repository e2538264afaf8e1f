// Error span annotation (annotate/protocols/esa.html): mark error spans in the output (mouse,
// keyboard or a touch screen's handles), then a 0-100 score. The marking is the span marker's
// (static/js/span_marker.js, loaded first: `Esa.scripts_first`); this module only registers its
// page of one output card.
(function () {
  "use strict";
  window.Annotate.register("esa", window.SpanMarker.page().behaviour);
})();
