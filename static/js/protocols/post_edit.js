// Post-editing (annotate/protocols/post_edit.html): the annotator edits a copy of the output into
// an acceptable one, and rates the output where a criterion has a scale (annotate/_scale.html,
// annotate.js's sliders and keys). The answer per output and criterion is {post_edit, rating}; the
// server computes the HTER. The text box is a text field, so annotate.js leaves its keys alone:
// Enter makes a new line, Ctrl+Enter (or Cmd+Enter) sends the unit, Esc puts the output back. Its
// text travels in the draft (`post_edits`, by output id): annotate.js saves inputs only.
(function () {
  "use strict";
  var unit = null;
  var boxes = []; // {box, output}

  function send(form) {
    if (form.requestSubmit) form.requestSubmit();
    else form.dispatchEvent(new Event("submit", {cancelable: true}));
  }

  window.Annotate.register("post-edit", {
    init: function (shared) {
      // Once a unit: the next unit is drawn from a copy of the first, whose box still holds the
      // first output's text; every box starts as a copy of its own output.
      unit = shared;
      boxes = [];
      shared.root.querySelectorAll("[data-post-edit]").forEach(function (box) {
        var output = shared.config.outputs.filter(function (o) { return String(o.id) === box.dataset.postEdit; })[0];
        if (!output) return;
        box.value = output.text;
        boxes.push({box: box, output: output});
        box.addEventListener("input", function () { shared.changed(); });
        box.addEventListener("keydown", function (event) {
          if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
            event.preventDefault();
            send(shared.form);
          } else if (event.key === "Escape" && box.value !== output.text) {
            event.preventDefault();
            box.value = output.text;
            shared.changed();
            shared.say("The output is back as it was.");
          }
        });
      });
    },
    collect: function (shared) {
      var judgements = [], missing = [];
      boxes.forEach(function (entry) {
        var text = entry.box.value;
        if (!text.trim()) missing.push("the post-edit (it is empty)");
        shared.config.criteria.forEach(function (criterion) {
          var answer = {criterion: criterion.name, output: entry.output.id, post_edit: text};
          var name = "s-" + criterion.index + "-" + entry.output.id;
          if (shared.form.querySelector('[name="' + name + '"]')) {
            var raw = shared.valueOf(name);
            if (raw === null || !isFinite(Number(raw))) { missing.push(criterion.name); return; }
            answer.rating = Number(raw);
          }
          judgements.push(answer);
        });
      });
      return {judgements: judgements, missing: missing.filter(function (m, i) { return missing.indexOf(m) === i; })};
    },
    snapshot: function (draft) {
      var edits = {};
      boxes.forEach(function (entry) { edits[entry.output.id] = entry.box.value; });
      draft.post_edits = edits;
    },
    restore: function (draft) {
      var edits = draft.post_edits;
      if (!edits || typeof edits !== "object") return;
      boxes.forEach(function (entry) {
        if (typeof edits[entry.output.id] === "string") entry.box.value = edits[entry.output.id];
      });
    },
    ready: function () {
      // The keyboard starts in the text to edit (Tab moves on to the ratings and Submit).
      if (boxes.length && !unit.config.preview) boxes[0].box.focus({preventScroll: true});
    }
  });
})();
