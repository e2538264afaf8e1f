// Contrastive ESA (annotate/protocols/cesa.html): 2-5 outputs of one input on one screen, each
// output card with a span marker of its own (static/js/span_marker.js, loaded first) and its score.
// Up / Down (or a click) move between the outputs, S goes to the current output's score, T back
// to its text: the span marker's page handles several cards as it handles ESA's one.
(function () {
  "use strict";
  window.Annotate.register("cesa", window.SpanMarker.page().behaviour);
})();
