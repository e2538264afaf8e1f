// Error span annotation (ESA): mark error spans in the output (mouse or keyboard), then a 0-100
// score (annotate/protocols/esa.html). Spans are kept in code points, as the server stores them,
// and travel in the draft; a low score with no span is warned about once before sending.
// Phones select with the system's handles (no mouseup): the selection is read on
// `selectionchange`. Right-to-left outputs (dir="auto") keep logical offsets; the arrow keys
// follow the text's direction. "Missing content" asks for its severity before it is added.
// MQM (annotate/protocols/mqm.html) uses the same engine: each span also gets a category of the
// campaign's typology (a letter key for a top-level category, 1-9 for a subcategory), then a
// severity (1-n); there is no score, the server computes the MQM score from the spans.
(function () {
  "use strict";
function build(mqm) {
  var unit = null;
  var esaText = null;
  var chars = [];
  var tokens = []; // word tokens: {start, end} in code points
  var spans = []; // {start, end, severity, missing}
  var cursor = 0, anchor = null; // keyboard selection over tokens
  var selection = null; // {start, end} pending selection, code points
  var selectedSpan = -1;
  var warned = false;
  var askingMissing = false; // the "how severe is the missing content?" question is open
  // MQM: the error being added ({range | missing, node, category}) and the question open for it
  // ("category", "sub" or "severity"), or null.
  var pending = null;

  function say(text) { unit.say(text); }
  function spanText(span) {
    return span.missing ? "[missing content]" : chars.slice(span.start, span.end).join("");
  }
  function render() {
    if (!esaText) return;
    var cuts = {0: true};
    cuts[chars.length] = true;
    tokens.forEach(function (t) { cuts[t.start] = true; cuts[t.end] = true; });
    spans.forEach(function (s) { if (!s.missing) { cuts[s.start] = true; cuts[s.end] = true; } });
    if (selection) { cuts[selection.start] = true; cuts[selection.end] = true; }
    var points = Object.keys(cuts).map(Number).sort(function (a, b) { return a - b; });
    esaText.textContent = "";
    var cursorToken = tokens[cursor];
    for (var i = 0; i + 1 < points.length; i++) {
      var s = points[i], e = points[i + 1];
      var piece = document.createElement("span");
      piece.textContent = chars.slice(s, e).join("");
      piece.dataset.s = s;
      piece.dataset.e = e;
      var covering = -1;
      spans.forEach(function (span, index) {
        if (!span.missing && span.start <= s && e <= span.end) covering = index;
      });
      if (covering >= 0) {
        piece.className = "err sev-" + spans[covering].severity + (covering === selectedSpan ? " picked" : "");
        piece.dataset.span = covering;
        piece.title = spans[covering].severity + " error" +
          (spans[covering].category ? ": " + spans[covering].category : "");
      }
      if (selection && selection.start <= s && e <= selection.end) piece.classList.add("selecting");
      if (cursorToken && cursorToken.start <= s && e <= cursorToken.end) piece.classList.add("cursor");
      esaText.appendChild(piece);
    }
    renderSpanList();
  }
  function renderSpanList() {
    var list = document.getElementById("span-list");
    var count = document.getElementById("span-count");
    if (!list) return;
    list.textContent = "";
    if (count) count.textContent = String(spans.length);
    spans.forEach(function (span, index) {
      var li = document.createElement("li");
      li.className = "span-row sev-" + span.severity + (index === selectedSpan ? " picked" : "");
      var quote = document.createElement("q");
      quote.textContent = spanText(span);
      quote.dir = "auto";
      li.appendChild(quote);
      if (mqm) li.appendChild(categorySelect(span, index));
      var select = document.createElement("select");
      select.setAttribute("aria-label", "Severity of error " + (index + 1));
      unit.config.severities.forEach(function (severity) {
        var option = document.createElement("option");
        option.value = severity;
        option.textContent = severity;
        option.selected = severity === span.severity;
        select.appendChild(option);
      });
      select.addEventListener("change", function () { span.severity = select.value; render(); unit.changed(); });
      li.appendChild(select);
      var remove = document.createElement("button");
      remove.type = "button";
      remove.className = "btn btn-small btn-quiet";
      remove.textContent = "Remove";
      remove.setAttribute("aria-label", "Remove error " + (index + 1));
      remove.addEventListener("click", function () { removeSpan(index); });
      li.appendChild(remove);
      list.appendChild(li);
    });
  }
  function categorySelect(span, index) {
    var select = document.createElement("select");
    select.setAttribute("aria-label", "Category of error " + (index + 1));
    var paths = leafPaths(unit.config.typology || [], "");
    if (paths.indexOf(span.category) < 0) paths.unshift(span.category);
    paths.forEach(function (path) {
      var option = document.createElement("option");
      option.value = path;
      option.textContent = path;
      option.selected = path === span.category;
      select.appendChild(option);
    });
    select.addEventListener("change", function () { span.category = select.value; render(); unit.changed(); });
    return select;
  }
  function leafPaths(nodes, prefix) {
    var out = [];
    nodes.forEach(function (node) {
      var path = prefix + node.name;
      if (node.children && node.children.length) out = out.concat(leafPaths(node.children, path + "/"));
      else out.push(path);
    });
    return out;
  }
  function removeSpan(index) {
    spans.splice(index, 1);
    selectedSpan = -1;
    render();
    unit.changed();
    say("Error removed.");
  }
  function keyboardSelection() {
    if (!tokens.length) return null;
    var a = anchor === null ? cursor : anchor;
    var lo = Math.min(a, cursor), hi = Math.max(a, cursor);
    return {start: tokens[lo].start, end: tokens[hi].end};
  }
  function currentRange() {
    var range = selection || keyboardSelection();
    return range && range.start < range.end ? range : null;
  }
  function mark(severity, category, given) {
    var range = given || currentRange();
    if (!range) { say("Select some text first."); return; }
    // A new span replaces the parts of older spans it overlaps.
    spans = spans.filter(function (s) { return s.missing || s.end <= range.start || s.start >= range.end; });
    var span = {start: range.start, end: range.end, severity: severity, missing: false};
    if (mqm) span.category = category;
    spans.push(span);
    spans.sort(function (x, y) { return (x.missing ? 1e12 : x.start) - (y.missing ? 1e12 : y.start); });
    selection = null;
    anchor = null;
    selectedSpan = -1;
    window.getSelection().removeAllRanges();
    render();
    unit.changed();
    say("Marked a " + severity + " error" + (mqm ? " (" + category + ")." : "."));
  }
  function missingAsk(open) {
    var ask = document.getElementById("esa-missing-ask");
    askingMissing = Boolean(open && ask);
    if (!ask) return;
    ask.hidden = !askingMissing;
    if (askingMissing) {
      var first = ask.querySelector("[data-missing-severity]");
      if (first) first.focus();
      say("How severe is the missing content? Choose a severity (1-" + unit.config.severities.length + "), or Esc.");
    }
  }
  function addMissing(severity, category) {
    missingAsk(false);
    var span = {start: null, end: null, severity: severity, missing: true};
    if (mqm) span.category = category;
    spans.push(span);
    render();
    unit.changed();
    say("Added a " + severity + " missing-content marker" + (mqm ? " (" + category + ")." : "."));
    if (esaText) esaText.focus({preventScroll: true});
  }
  function offsetIn(node, offset) {
    var element = node.nodeType === 3 ? node.parentNode : node;
    if (!element || !element.dataset || element.dataset.s === undefined) return null;
    var within = node.nodeType === 3 ? Array.from(node.textContent.slice(0, offset)).length : 0;
    return Number(element.dataset.s) + within;
  }
  // The selection's [start, end) in code points, trimmed of white space; null outside the text.
  function rangeOf(sel) {
    var a = offsetIn(sel.anchorNode, sel.anchorOffset), b = offsetIn(sel.focusNode, sel.focusOffset);
    if (a === null || b === null) return null;
    var start = Math.min(a, b), end = Math.max(a, b);
    while (start < end && /\s/.test(chars[start])) start++;
    while (end > start && /\s/.test(chars[end - 1])) end--;
    return start < end ? {start: start, end: end} : null;
  }
  // Touch screens: the selection grows with the handles and no mouseup comes; keep the latest
  // one without re-rendering (that would drop the selection still being dragged). A collapsed
  // selection (a tap on a button clears it) keeps the one chosen.
  function onSelectionChange() {
    var sel = window.getSelection();
    if (!esaText || !sel || sel.rangeCount === 0 || sel.isCollapsed) return;
    if (!esaText.contains(sel.anchorNode) || !esaText.contains(sel.focusNode)) return;
    var range = rangeOf(sel);
    if (!range) return;
    selection = range;
    say("Selected “" + chars.slice(range.start, range.end).join("") + "”: choose a severity.");
  }
  function onMouseUp() {
    var sel = window.getSelection();
    if (!sel || sel.rangeCount === 0) return;
    if (sel.isCollapsed) {
      var target = sel.anchorNode && sel.anchorNode.parentNode;
      selection = null;
      if (target && target.dataset && target.dataset.span !== undefined) {
        selectedSpan = Number(target.dataset.span);
        say("Selected error " + (selectedSpan + 1) + ": change its severity or remove it below.");
      }
      render();
      return;
    }
    var range = rangeOf(sel);
    if (!range) return;
    selection = range;
    say("Selected “" + chars.slice(range.start, range.end).join("") + "”: choose a severity.");
    render();
  }

  // ---- MQM: category, then subcategory, then severity --------------------------------------------
  function askNode() { return document.getElementById("mqm-ask"); }
  function ask(step, question, choices) {
    var box = askNode();
    pending.step = step;
    if (!box) return;
    document.getElementById("mqm-ask-question").textContent = question;
    var holder = document.getElementById("mqm-ask-choices");
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
      return (unit.config.typology || []).map(function (node) {
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
    return pending.missing ? "the missing content" : "“" + chars.slice(pending.range.start, pending.range.end).join("") + "”";
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
    var range = currentRange();
    if (!range) { say("Select some text first (or M for missing content)."); return; }
    pending = {range: range};
    selection = range; // shown as selected while its category and severity are asked
    render();
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
    if (done.missing) addMissing(choice.value, done.category);
    else mark(choice.value, done.category, done.range);
    if (esaText) esaText.focus({preventScroll: true});
    return true;
  }
  function mqmKeys(event) {
    var key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
    if (pending) {
      if (key === "Escape") { cancelAsk("No error added."); return true; }
      return answer(key);
    }
    if (key === "m") { startMissing(); return true; }
    var node = (unit.config.typology || []).filter(function (n) { return n.key === key; })[0];
    if (node) { startError(node); return true; }
    return false;
  }

  return {
    init: function (shared) {
      unit = shared;
      esaText = document.getElementById("esa-text");
      if (!esaText) return;
      chars = Array.from(unit.config.outputs[0].text);
      var re = /\S+/gu, text = chars.join(""), match;
      // Word tokens in code points (regex indices are UTF-16 units: convert).
      while ((match = re.exec(text)) !== null) {
        var start = Array.from(text.slice(0, match.index)).length;
        tokens.push({start: start, end: start + Array.from(match[0]).length});
      }
      esaText.addEventListener("mouseup", onMouseUp);
      document.addEventListener("selectionchange", onSelectionChange);
      unit.root.querySelectorAll("[data-severity]").forEach(function (button) {
        button.addEventListener("mousedown", function (event) { event.preventDefault(); });
        button.addEventListener("click", function () { mark(button.dataset.severity); });
      });
      var missingButton = document.getElementById("esa-missing");
      if (missingButton) missingButton.addEventListener("click", function () { if (mqm) startMissing(); else missingAsk(true); });
      unit.root.querySelectorAll("[data-category]").forEach(function (button) {
        button.addEventListener("mousedown", function (event) { event.preventDefault(); });
        button.addEventListener("click", function () { startError(unit.config.typology[Number(button.dataset.category)]); });
      });
      unit.root.querySelectorAll("[data-ask-cancel]").forEach(function (button) {
        button.addEventListener("click", function () { cancelAsk("No error added."); });
      });
      unit.root.querySelectorAll("[data-missing-severity]").forEach(function (button) {
        button.addEventListener("click", function () { addMissing(button.dataset.missingSeverity); });
      });
      unit.root.querySelectorAll("[data-missing-cancel]").forEach(function (button) {
        button.addEventListener("click", function () { missingAsk(false); say("No missing content added."); });
      });
    },
    collect: function (shared) {
      function sent(s) {
        var out = s.missing ? {missing: true, severity: s.severity} : {start: s.start, end: s.end, severity: s.severity};
        if (mqm) out.category = s.category;
        return out;
      }
      // MQM: the spans are the whole answer (none: no error), the same for every criterion.
      if (mqm) {
        return {missing: [], judgements: shared.config.criteria.map(function (criterion) {
          return {criterion: criterion.name, output: shared.config.outputs[0].id, spans: spans.map(sent)};
        })};
      }
      return shared.scores(function (answer) { answer.spans = spans.map(sent); });
    },
    // A score below 66 ("flawed" or worse) with no error marked: warn once, send on the next try.
    check: function (result) {
      if (mqm) {
        if (pending) { unit.showErrors(["Finish the error being added (choose its category and severity), or press Esc."]); return false; }
        return true;
      }
      if (!warned && !spans.length && result.judgements.some(function (j) { return j.score < 66; })) {
        var warning = document.getElementById("esa-warning");
        if (warning) warning.hidden = false;
        warned = true;
        return false;
      }
      return true;
    },
    changed: function () {
      warned = false;
      var warning = document.getElementById("esa-warning");
      if (warning) warning.hidden = true;
    },
    // The keys work on the text (no question rows): arrows move a word cursor, Shift extends the
    // selection, 1-n mark a severity, M a missing-content marker, Del removes, S goes to the score.
    // MQM: a category's letter (then 1-9 for the subcategory and the severity) instead of 1-n and S.
    keydown: function (event) {
      var key = event.key;
      var target = event.target;
      var severities = unit.config.severities;
      var digit = Number(key);
      if (mqm && !/^Arrow/.test(key) && key !== "Delete" && key !== "Backspace" && mqmKeys(event)) return true;
      if (mqm && pending) return false;
      if (askingMissing) {
        if (digit >= 1 && digit <= severities.length) { addMissing(severities[digit - 1]); return true; }
        if (key === "Escape") { missingAsk(false); say("No missing content added."); return true; }
        return false; // Tab, Enter on a focused choice: the browser's
      }
      if (target && target.tagName === "INPUT" && target.type === "range" && /^Arrow/.test(key)) return false;
      if (key === "ArrowRight" || key === "ArrowLeft") {
        if (!tokens.length) return false;
        if (event.shiftKey) { if (anchor === null) anchor = cursor; } else { anchor = null; }
        // In a right-to-left text the next word is on the left.
        var rtl = esaText && window.getComputedStyle(esaText).direction === "rtl";
        var step = (key === "ArrowRight") !== rtl ? 1 : -1;
        cursor = Math.max(0, Math.min(tokens.length - 1, cursor + step));
        selection = event.shiftKey ? keyboardSelection() : null;
        render();
        say(event.shiftKey ? "Selected “" + chars.slice(selection.start, selection.end).join("") + "”"
          : "At “" + chars.slice(tokens[cursor].start, tokens[cursor].end).join("") + "”");
        return true;
      }
      if (!mqm) {
        if (digit >= 1 && digit <= severities.length) { mark(severities[digit - 1]); return true; }
        if (key === "m" || key === "M") { missingAsk(true); return true; }
      }
      if (key === "Delete" || key === "Backspace") {
        var index = selectedSpan;
        if (index < 0 && tokens[cursor]) {
          var t = tokens[cursor];
          index = spans.findIndex(function (s) { return !s.missing && s.start < t.end && t.start < s.end; });
        }
        if (index >= 0) removeSpan(index);
        return true;
      }
      if (!mqm && (key === "s" || key === "S")) {
        var slider = unit.form.querySelector("input[type=range]");
        if (slider) slider.focus();
        return true;
      }
      return false;
    },
    snapshot: function (draft) { draft.spans = spans; },
    restore: function (draft) {
      spans = Array.isArray(draft.spans) ? draft.spans.filter(function (s) {
        return s && (s.missing || (s.start >= 0 && s.end <= chars.length && s.start < s.end)) &&
          (!mqm || typeof s.category === "string");
      }) : [];
    },
    ready: function () {
      render();
      if (esaText) esaText.focus({preventScroll: true});
    }
  };
}

  window.Annotate.register("esa", build(false));
  window.Annotate.register("mqm", build(true));
})();
