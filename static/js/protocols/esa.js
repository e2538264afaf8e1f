// Error span annotation (ESA): mark error spans in the output (mouse or keyboard), then a 0-100
// score (annotate/protocols/esa.html). Spans are kept in code points, as the server stores them,
// and travel in the draft; a low score with no span is warned about once before sending.
// Phones select with the system's handles (no mouseup): the selection is read on
// `selectionchange`. Right-to-left outputs (dir="auto") keep logical offsets; the arrow keys
// follow the text's direction. "Missing content" asks for its severity before it is added.
// ESA^AI: an output may come with suggested spans (`suggestions`, no source named). Each is
// pending until the annotator accepts it (a span that keeps `suggestion: k`), edits it (its
// severity, or a new extent marked while editing) or deletes it; a unit with a pending
// suggestion is not sent. The server derives accepted / edited / deleted / added from that.
(function () {
  "use strict";
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
  var suggestions = []; // {start, end, severity, missing, position, state: pending|taken|deleted}
  var editing = -1; // index in `spans` of a suggestion whose extent the next mark replaces

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
    pending().forEach(function (s) { if (!s.missing) { cuts[s.start] = true; cuts[s.end] = true; } });
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
        piece.title = spans[covering].severity + " error";
      } else {
        var suggested = pending().filter(function (sg) { return !sg.missing && sg.start <= s && e <= sg.end; })[0];
        if (suggested) {
          piece.className = "err suggested sev-" + suggested.severity;
          piece.title = "AI suggestion: " + suggested.severity + " error (accept, edit or delete it below)";
        }
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
    renderSuggestions();
    spans.forEach(function (span, index) {
      var li = document.createElement("li");
      li.className = "span-row sev-" + span.severity + (index === selectedSpan ? " picked" : "");
      if (span.suggestion !== undefined) {
        var from = suggestions.filter(function (sg) { return sg.position === span.suggestion; })[0];
        var same = from && from.start === span.start && from.end === span.end && from.severity === span.severity;
        li.appendChild(badge(same ? "AI suggestion, accepted" : "AI suggestion, edited"));
        if (index === editing) li.appendChild(badge("editing: select the new extent, then a severity"));
      }
      var quote = document.createElement("q");
      quote.textContent = spanText(span);
      quote.dir = "auto";
      li.appendChild(quote);
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
  function pending() { return suggestions.filter(function (sg) { return sg.state === "pending"; }); }
  function badge(text) {
    var b = document.createElement("span");
    b.className = "badge suggestion-badge";
    b.textContent = text;
    return b;
  }
  function button(text, label, handler) {
    var b = document.createElement("button");
    b.type = "button";
    b.className = "btn btn-small";
    b.textContent = text;
    b.setAttribute("aria-label", label);
    b.addEventListener("click", handler);
    return b;
  }
  // Pending suggestions, each with Accept, Edit and Delete (and its severity, changed = edited).
  function renderSuggestions() {
    var box = document.getElementById("suggestion-list");
    if (!box) return;
    box.textContent = "";
    var left = pending();
    var counter = document.getElementById("suggestion-count");
    if (counter) counter.textContent = String(left.length);
    left.forEach(function (sg) {
      var n = suggestions.indexOf(sg) + 1;
      var li = document.createElement("li");
      li.className = "span-row suggestion-row sev-" + sg.severity;
      li.dataset.suggestion = sg.position;
      li.appendChild(badge("AI suggestion"));
      var quote = document.createElement("q");
      quote.textContent = spanText(sg);
      quote.dir = "auto";
      li.appendChild(quote);
      var select = document.createElement("select");
      select.setAttribute("aria-label", "Severity of AI suggestion " + n + " (changing it edits the suggestion)");
      unit.config.severities.forEach(function (severity) {
        var option = document.createElement("option");
        option.value = severity;
        option.textContent = severity;
        option.selected = severity === sg.severity;
        select.appendChild(option);
      });
      select.addEventListener("change", function () { take(sg, select.value, false); });
      li.appendChild(select);
      li.appendChild(button("Accept", "Accept AI suggestion " + n, function () { take(sg, sg.severity, false); }));
      if (!sg.missing) {
        li.appendChild(button("Edit", "Edit the extent of AI suggestion " + n, function () { take(sg, sg.severity, true); }));
      }
      li.appendChild(button("Delete", "Delete AI suggestion " + n, function () {
        sg.state = "deleted";
        render();
        unit.changed();
        say("Suggestion deleted.");
      }));
      box.appendChild(li);
    });
    var group = document.getElementById("esa-suggestions");
    if (group) group.hidden = !suggestions.length;
  }
  // A suggestion becomes one of the annotator's spans, still naming it (`suggestion`).
  function take(sg, severity, edit) {
    sg.state = "taken";
    var span = {start: sg.start, end: sg.end, severity: severity, missing: sg.missing, suggestion: sg.position};
    spans = spans.filter(function (s) { return s.missing || span.missing || s.end <= span.start || s.start >= span.end; });
    spans.push(span);
    sortSpans();
    editing = edit ? spans.indexOf(span) : -1;
    selectedSpan = editing;
    render();
    unit.changed();
    say(edit ? "Editing the suggestion: select its new extent, then a severity."
      : severity === sg.severity ? "Suggestion accepted." : "Suggestion accepted as " + severity + ".");
  }
  // The pending suggestion under the keyboard's word cursor, if any.
  function suggestionAtCursor() {
    var t = tokens[cursor];
    if (!t) return null;
    return pending().filter(function (sg) { return !sg.missing && sg.start < t.end && t.start < sg.end; })[0] || null;
  }
  function sortSpans() {
    spans.sort(function (x, y) { return (x.missing ? 1e12 : x.start) - (y.missing ? 1e12 : y.start); });
  }
  function removeSpan(index) {
    var gone = spans[index];
    if (gone && gone.suggestion !== undefined) {
      // Removing a span that came from a suggestion deletes the suggestion.
      suggestions.forEach(function (sg) { if (sg.position === gone.suggestion) sg.state = "deleted"; });
    }
    editing = -1;
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
  function mark(severity) {
    var range = selection || keyboardSelection();
    if (!range || range.start >= range.end) { say("Select some text first."); return; }
    var fresh = {start: range.start, end: range.end, severity: severity, missing: false};
    if (editing >= 0 && spans[editing]) {
      // The suggestion being edited takes the new extent and severity.
      fresh.suggestion = spans[editing].suggestion;
      spans.splice(editing, 1);
      editing = -1;
    }
    // A new span replaces the parts of older spans it overlaps.
    spans = spans.filter(function (s) { return s.missing || s.end <= range.start || s.start >= range.end; });
    spans.push(fresh);
    sortSpans();
    selection = null;
    anchor = null;
    selectedSpan = -1;
    window.getSelection().removeAllRanges();
    render();
    unit.changed();
    say("Marked a " + severity + " error.");
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
  function addMissing(severity) {
    missingAsk(false);
    spans.push({start: null, end: null, severity: severity, missing: true});
    render();
    unit.changed();
    say("Added a " + severity + " missing-content marker.");
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

  window.Annotate.register("esa", {
    init: function (shared) {
      unit = shared;
      esaText = document.getElementById("esa-text");
      if (!esaText) return;
      chars = Array.from(unit.config.outputs[0].text);
      suggestions = (unit.config.outputs[0].suggestions || []).map(function (sg, k) {
        return {start: sg.start, end: sg.end, severity: sg.severity, missing: Boolean(sg.missing), position: k,
                state: "pending"};
      });
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
      if (missingButton) missingButton.addEventListener("click", function () { missingAsk(true); });
      unit.root.querySelectorAll("[data-missing-severity]").forEach(function (button) {
        button.addEventListener("click", function () { addMissing(button.dataset.missingSeverity); });
      });
      unit.root.querySelectorAll("[data-missing-cancel]").forEach(function (button) {
        button.addEventListener("click", function () { missingAsk(false); say("No missing content added."); });
      });
    },
    collect: function (shared) {
      return shared.scores(function (answer) {
        answer.spans = spans.map(function (s) {
          var out = s.missing ? {missing: true, severity: s.severity} : {start: s.start, end: s.end, severity: s.severity};
          if (s.suggestion !== undefined) out.suggestion = s.suggestion;
          return out;
        });
      });
    },
    // A score below 66 ("flawed" or worse) with no error marked: warn once, send on the next try.
    check: function (result) {
      var left = pending().length;
      var note = document.getElementById("esa-pending");
      if (note) note.hidden = !left;
      if (left) {
        if (note) note.textContent = left + " AI suggestion" + (left > 1 ? "s are" : " is") +
          " still open: accept, edit or delete each before sending.";
        say("Decide on every AI suggestion first.");
        return false;
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
      var note = document.getElementById("esa-pending");
      if (note && !pending().length) note.hidden = true;
      var warning = document.getElementById("esa-warning");
      if (warning) warning.hidden = true;
    },
    // The keys work on the text (no question rows): arrows move a word cursor, Shift extends the
    // selection, 1-n mark a severity, M a missing-content marker, Del removes, S goes to the score.
    keydown: function (event) {
      var key = event.key;
      var target = event.target;
      var severities = unit.config.severities;
      var digit = Number(key);
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
        var here = suggestionAtCursor();
        say((event.shiftKey ? "Selected “" + chars.slice(selection.start, selection.end).join("") + "”"
          : "At “" + chars.slice(tokens[cursor].start, tokens[cursor].end).join("") + "”") +
          (here ? ": AI suggestion, " + here.severity + " error (A accepts, E edits, Delete deletes)" : ""));
        return true;
      }
      var suggested = suggestionAtCursor();
      if (suggested && (key === "a" || key === "A")) { take(suggested, suggested.severity, false); return true; }
      if (suggested && (key === "e" || key === "E")) { take(suggested, suggested.severity, true); return true; }
      if (digit >= 1 && digit <= severities.length) { mark(severities[digit - 1]); return true; }
      if (key === "m" || key === "M") { missingAsk(true); return true; }
      if (key === "Delete" || key === "Backspace") {
        var index = selectedSpan;
        if (index < 0 && tokens[cursor]) {
          var t = tokens[cursor];
          index = spans.findIndex(function (s) { return !s.missing && s.start < t.end && t.start < s.end; });
        }
        if (index >= 0) removeSpan(index);
        else if (suggested) {
          suggested.state = "deleted";
          render();
          unit.changed();
          say("Suggestion deleted.");
        }
        return true;
      }
      if (key === "s" || key === "S") {
        var slider = unit.form.querySelector("input[type=range]");
        if (slider) slider.focus();
        return true;
      }
      return false;
    },
    snapshot: function (draft) {
      draft.spans = spans;
      draft.suggestionStates = suggestions.map(function (sg) { return sg.state; });
    },
    restore: function (draft) {
      spans = Array.isArray(draft.spans) ? draft.spans.filter(function (s) {
        return s && (s.missing || (s.start >= 0 && s.end <= chars.length && s.start < s.end));
      }) : [];
      var states = Array.isArray(draft.suggestionStates) ? draft.suggestionStates : [];
      suggestions.forEach(function (sg, k) {
        if (states[k] === "taken" || states[k] === "deleted") sg.state = states[k];
        if (draft.suggestionsDecided) {
          // A revision: the stored answer decided every suggestion (named by a span, or deleted).
          var named = spans.some(function (s) { return s.suggestion === sg.position; });
          sg.state = named ? "taken" : "deleted";
        }
      });
    },
    ready: function () {
      render();
      if (esaText) esaText.focus({preventScroll: true});
    }
  });
})();
