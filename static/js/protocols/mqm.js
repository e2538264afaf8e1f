// MQM error annotation (annotate/protocols/mqm.html): ESA's span marker (static/js/span_marker.js,
// loaded first) on one output card, plus for each error a category of the campaign's typology (a
// letter key for a top-level category, 1-9 for a subcategory), then a severity (1-n); there is no
// score, the server computes the MQM score from the spans. This module wraps the marker's keys.
(function () {
  "use strict";
  var spans = window.SpanMarker.page(); // its state: spans.unit, spans.markers, spans.current
  var behaviour = spans.behaviour;
  function say(text) { spans.say(text); }

  // ESA's markers (one card), plus for each error a category of the campaign's typology, asked
  // after the selection: a category (its letter key or button), then its subcategory (1-9), then
  // the severity (1-n). M: missing content, then category and severity; Esc cancels. The span list
  // changes an error's category (a select beside its severity's). No score: the spans are the
  // answer, the server computes the MQM score.
  function leafPaths(nodes, prefix) {
    var out = [];
    nodes.forEach(function (node) {
      var path = prefix + node.name;
      if (node.children && node.children.length) out = out.concat(leafPaths(node.children, path + "/"));
      else out.push(path);
    });
    return out;
  }

  // Gives a marker MQM's questions: the error being added ({range | missing, node, category}) and
  // the question open for it (step "category", "sub" or "severity") are the card's own.
  function mqmAttach(marker) {
    var unit = spans.unit;
    var card = marker.card;
    var pending = null;
    var typology = unit.config.typology || [];

    function askNode() { return card.querySelector("[data-mqm-ask]"); }
    function ask(step, question, choices) {
      var box = askNode();
      pending.step = step;
      if (!box) return;
      box.querySelector("[data-mqm-question]").textContent = question;
      var holder = box.querySelector("[data-mqm-choices]");
      holder.textContent = "";
      choices.forEach(function (choice) {
        var button = document.createElement("button");
        button.type = "button";
        button.className = "btn btn-small" + (step === "severity" ? " sev-" + choice.value : "");
        button.dataset.choice = choice.key;
        button.appendChild(document.createTextNode(choice.label + " "));
        var kbd = document.createElement("kbd");
        kbd.textContent = choice.key.toUpperCase();
        button.appendChild(kbd);
        if (choice.title) button.title = choice.title;
        button.addEventListener("mousedown", function (event) { event.preventDefault(); });
        button.addEventListener("click", function () { answer(choice.key); });
        holder.appendChild(button);
      });
      box.hidden = false;
      say(question);
    }
    function cancelAsk(message) {
      pending = null;
      var box = askNode();
      if (box) box.hidden = true;
      if (message) say(message);
    }
    function choicesOf(step) {
      if (step === "category") {
        return typology.map(function (node) {
          return {key: node.key, label: node.name, value: node, title: node.description || ""};
        });
      }
      if (step === "sub") {
        return pending.node.children.map(function (node, i) {
          return {key: String(i + 1), label: node.name, value: node, title: node.description || ""};
        });
      }
      return unit.config.severities.map(function (severity, i) {
        return {key: String(i + 1), label: severity.charAt(0).toUpperCase() + severity.slice(1), value: severity};
      });
    }
    function what() {
      return pending.missing ? "the missing content"
        : "“" + marker.chars.slice(pending.range.start, pending.range.end).join("") + "”";
    }
    // A category chosen (top level or subcategory): ask for its subcategory, or the severity.
    function chooseCategory(node, path) {
      pending.node = node;
      pending.category = path;
      if (node.children && node.children.length) {
        ask("sub", node.name + ": which kind of error is " + what() + "? (1-" + node.children.length + ")",
          choicesOf("sub"));
      } else {
        ask("severity", path + ": how severe is " + what() + "? (1-" + unit.config.severities.length + ")",
          choicesOf("severity"));
      }
    }
    function startError(node) {
      var range = marker.currentRange();
      if (!range) { say("Select some text first (or M for missing content)."); return; }
      pending = {range: range};
      marker.hold(range); // shown as selected while its category and severity are asked
      chooseCategory(node, node.name);
    }
    function startMissing() {
      pending = {missing: true};
      ask("category", "Missing content: which category? (a letter key)", choicesOf("category"));
    }
    // One answer to the open question (a choice's key); true when it was one of the choices.
    function answer(key) {
      if (!pending) return false;
      var choice = choicesOf(pending.step).filter(function (c) { return c.key === key; })[0];
      if (!choice) return false;
      if (pending.step === "category") { chooseCategory(choice.value, choice.value.name); return true; }
      if (pending.step === "sub") { chooseCategory(choice.value, pending.category + "/" + choice.value.name); return true; }
      var done = pending;
      cancelAsk(null);
      if (done.missing) marker.addMissing(choice.value, {category: done.category});
      else marker.mark(choice.value, {category: done.category}, done.range);
      if (marker.text) marker.text.focus({preventScroll: true});
      return true;
    }
    function mqmKeys(event) {
      var key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
      if (pending) {
        if (key === "Escape") { cancelAsk("No error added."); return true; }
        return answer(key);
      }
      if (key === "m") { startMissing(); return true; }
      var node = typology.filter(function (n) { return n.key === key; })[0];
      if (node) { startError(node); return true; }
      return false;
    }

    // The span list: the error's category, a select of the typology's leaves.
    marker.rowExtra = function (span, label) {
      var select = document.createElement("select");
      select.setAttribute("aria-label", "Category of " + label);
      var paths = leafPaths(typology, "");
      if (paths.indexOf(span.category) < 0) paths.unshift(span.category);
      paths.forEach(function (path) {
        var option = document.createElement("option");
        option.value = path;
        option.textContent = path;
        option.selected = path === span.category;
        select.appendChild(option);
      });
      select.addEventListener("change", function () { span.category = select.value; marker.render(); unit.changed(); });
      return select;
    };
    // Arrows (and Shift) select and Del removes as in ESA; every other key is MQM's: a category's
    // letter, M, then the open question's digits (no severity digits without a category, no S).
    var markerKeys = marker.keydown;
    marker.keydown = function (event) {
      var key = event.key;
      var editing = /^Arrow/.test(key) || key === "Delete" || key === "Backspace";
      if (!editing) return mqmKeys(event);
      return pending ? false : markerKeys(event);
    };
    var markerRestore = marker.restore;
    marker.restore = function (list, states, decided) {
      markerRestore(Array.isArray(list) ? list.filter(function (s) { return s && typeof s.category === "string"; }) : list,
                    states, decided);
    };
    marker.errorPending = function () { return pending !== null; }; // an MQM error still being added

    card.querySelectorAll("[data-category]").forEach(function (button) {
      button.addEventListener("mousedown", function (event) { event.preventDefault(); });
      button.addEventListener("click", function () { startError(typology[Number(button.dataset.category)]); });
    });
    card.querySelectorAll("[data-mqm-missing]").forEach(function (button) {
      button.addEventListener("click", startMissing);
    });
    card.querySelectorAll("[data-ask-cancel]").forEach(function (button) {
      button.addEventListener("click", function () { cancelAsk("No error added."); });
    });
  }

  window.Annotate.register("mqm", Object.assign({}, behaviour, {
    init: function (shared) {
      behaviour.init(shared);
      spans.markers.forEach(mqmAttach);
    },
    // The spans are the whole answer (none: no error), the same for every criterion.
    collect: function (shared) {
      var judgements = [];
      spans.markers.forEach(function (m) {
        shared.config.criteria.forEach(function (criterion) {
          judgements.push({criterion: criterion.name, output: m.output.id, spans: m.answerSpans()});
        });
      });
      return {missing: [], judgements: judgements};
    },
    check: function () {
      if (spans.markers.some(function (m) { return m.errorPending(); })) {
        spans.unit.showErrors(["Finish the error being added (choose its category and severity), or press Esc."]);
        return false;
      }
      return true;
    },
    // The current card's keys only (no score to go to).
    keydown: function (event) {
      var m = spans.markers[spans.current];
      return m ? m.keydown(event) : false;
    }
  }));
})();
