// Error span annotation: mark error spans in an output (mouse or keyboard), then a 0-100 score.
// One module for ESA (one output, annotate/protocols/esa.html) and contrastive ESA (2-5 outputs of
// one input on one screen, annotate/protocols/cesa.html): each output card gets a span marker of
// its own. Spans are kept in code points, as the server stores them, and travel in the draft; a
// low score with no span is warned about once before sending. Phones select with the system's
// handles (no mouseup): the selection is read on `selectionchange`. Right-to-left outputs
// (dir="auto") keep logical offsets; the arrow keys follow the text's direction. "Missing content"
// asks for its severity before it is added. cESA: Up / Down (or a click) move between the
// outputs, S goes to the current output's score, T back to its text.
// ESA^AI: an output may come with suggested spans (`suggestions`, no source named), listed in its
// card. Each is pending until the annotator accepts it (a span that keeps `suggestion: k`), edits
// it (its severity, or a new extent marked while editing) or deletes it (A / E / Delete at the word
// cursor); a unit with a pending suggestion is not sent. The server derives accepted / edited /
// deleted / added from that.
// MQM (one output, annotate/protocols/mqm.html) uses the same markers: each span also gets a
// category of the campaign's typology (a letter key for a top-level category, 1-9 for a
// subcategory), then a severity (1-n); there is no score, the server computes the MQM score from
// the spans. Its part is the "MQM" section below, which wraps the markers' keys.
(function () {
  "use strict";
  var unit = null;
  var markers = []; // one per output card, in the order shown
  var current = 0; // the marker the keys act on
  var warned = false;
  var listening = false; // the document's selectionchange listener, added once for every unit

  function say(text) { unit.say(text); }

  // The span marker of one output card: the card holds [data-esa-text] (the output), the
  // severity buttons, the missing-content question and the span list, all found inside it.
  function Marker(card, output, position) {
    var self = this;
    var textNode = card.querySelector("[data-esa-text]");
    var chars = Array.from(output.text);
    var tokens = []; // word tokens: {start, end} in code points
    var cursor = 0, anchor = null; // keyboard selection over tokens
    var selection = null; // {start, end} pending selection, code points
    var selectedSpan = -1;
    var askingMissing = false;
    var many = unit.config.outputs.length > 1;
    var name = many ? "output " + (position + 1) : "the output";
    self.card = card;
    self.text = textNode;
    self.output = output;
    self.spans = []; // {start, end, severity, missing, suggestion?[, category (MQM)]}
    // ESA^AI: {start, end, severity, missing, position, state: pending|taken|deleted}
    self.suggestions = (output.suggestions || []).map(function (sg, k) {
      return {start: sg.start, end: sg.end, severity: sg.severity, missing: Boolean(sg.missing), position: k,
              state: "pending"};
    });
    var editing = -1; // index in `spans` of a suggestion whose extent the next mark replaces

    var re = /\S+/gu, joined = chars.join(""), match;
    // Word tokens in code points (regex indices are UTF-16 units: convert).
    while ((match = re.exec(joined)) !== null) {
      var first = Array.from(joined.slice(0, match.index)).length;
      tokens.push({start: first, end: first + Array.from(match[0]).length});
    }

    function spanText(span) {
      return span.missing ? "[missing content]" : chars.slice(span.start, span.end).join("");
    }
    function render() {
      if (!textNode) return;
      var cuts = {0: true};
      cuts[chars.length] = true;
      tokens.forEach(function (t) { cuts[t.start] = true; cuts[t.end] = true; });
      self.spans.forEach(function (s) { if (!s.missing) { cuts[s.start] = true; cuts[s.end] = true; } });
      self.pending().forEach(function (s) { if (!s.missing) { cuts[s.start] = true; cuts[s.end] = true; } });
      if (selection) { cuts[selection.start] = true; cuts[selection.end] = true; }
      var points = Object.keys(cuts).map(Number).sort(function (a, b) { return a - b; });
      textNode.textContent = "";
      var cursorToken = tokens[cursor];
      for (var i = 0; i + 1 < points.length; i++) {
        var s = points[i], e = points[i + 1];
        var piece = document.createElement("span");
        piece.textContent = chars.slice(s, e).join("");
        piece.dataset.s = s;
        piece.dataset.e = e;
        var covering = -1;
        self.spans.forEach(function (span, index) {
          if (!span.missing && span.start <= s && e <= span.end) covering = index;
        });
        if (covering >= 0) {
          piece.className = "err sev-" + self.spans[covering].severity + (covering === selectedSpan ? " picked" : "");
          piece.dataset.span = covering;
          piece.title = self.spans[covering].severity + " error" +
            (self.spans[covering].category ? ": " + self.spans[covering].category : "");
        } else {
          var suggested = self.pending().filter(function (sg) { return !sg.missing && sg.start <= s && e <= sg.end; })[0];
          if (suggested) {
            piece.className = "err suggested sev-" + suggested.severity;
            piece.title = "AI suggestion: " + suggested.severity + " error (accept, edit or delete it below)";
          }
        }
        if (selection && selection.start <= s && e <= selection.end) piece.classList.add("selecting");
        if (cursorToken && cursorToken.start <= s && e <= cursorToken.end) piece.classList.add("cursor");
        textNode.appendChild(piece);
      }
      renderSpanList();
      renderSuggestions();
    }
    function renderSpanList() {
      var list = card.querySelector("[data-span-list]");
      var count = card.querySelector("[data-span-count]");
      if (!list) return;
      list.textContent = "";
      if (count) count.textContent = String(self.spans.length);
      var prefix = many ? "output " + (position + 1) + ", " : "";
      self.spans.forEach(function (span, index) {
        var li = document.createElement("li");
        li.className = "span-row sev-" + span.severity + (index === selectedSpan ? " picked" : "");
        var quote = document.createElement("q");
        quote.textContent = spanText(span);
        quote.dir = "auto";
        li.appendChild(quote);
        if (span.suggestion !== undefined) {
          var from = self.suggestions.filter(function (sg) { return sg.position === span.suggestion; })[0];
          var same = from && from.start === span.start && from.end === span.end && from.severity === span.severity;
          li.appendChild(badge(same ? "AI suggestion, accepted" : "AI suggestion, edited"));
          if (index === editing) li.appendChild(badge("editing: select the new extent, then a severity"));
        }
        if (self.rowExtra) li.appendChild(self.rowExtra(span, prefix + "error " + (index + 1))); // MQM: its category
        var select = document.createElement("select");
        select.setAttribute("aria-label", "Severity of " + prefix + "error " + (index + 1));
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
        remove.setAttribute("aria-label", "Remove " + prefix + "error " + (index + 1));
        remove.addEventListener("click", function () { removeSpan(index); });
        li.appendChild(remove);
        list.appendChild(li);
      });
    }
    self.pending = function () { return self.suggestions.filter(function (sg) { return sg.state === "pending"; }); };
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
      var box = card.querySelector("[data-suggestion-list]");
      if (!box) return;
      box.textContent = "";
      var left = self.pending();
      var counter = card.querySelector("[data-suggestion-count]");
      if (counter) counter.textContent = String(left.length);
      var of = many ? " of output " + (position + 1) : "";
      left.forEach(function (sg) {
        var n = self.suggestions.indexOf(sg) + 1;
        var li = document.createElement("li");
        li.className = "span-row suggestion-row sev-" + sg.severity;
        li.dataset.suggestion = sg.position;
        li.appendChild(badge("AI suggestion"));
        var quote = document.createElement("q");
        quote.textContent = spanText(sg);
        quote.dir = "auto";
        li.appendChild(quote);
        var select = document.createElement("select");
        select.setAttribute("aria-label", "Severity of AI suggestion " + n + of + " (changing it edits the suggestion)");
        unit.config.severities.forEach(function (severity) {
          var option = document.createElement("option");
          option.value = severity;
          option.textContent = severity;
          option.selected = severity === sg.severity;
          select.appendChild(option);
        });
        select.addEventListener("change", function () { setCurrent(position, false); take(sg, select.value, false); });
        li.appendChild(select);
        li.appendChild(button("Accept", "Accept AI suggestion " + n + of, function () {
          setCurrent(position, false);
          take(sg, sg.severity, false);
        }));
        if (!sg.missing) {
          li.appendChild(button("Edit", "Edit the extent of AI suggestion " + n + of, function () {
            setCurrent(position, false);
            take(sg, sg.severity, true);
          }));
        }
        li.appendChild(button("Delete", "Delete AI suggestion " + n + of, function () {
          setCurrent(position, false);
          drop(sg);
        }));
        box.appendChild(li);
      });
      var group = card.querySelector("[data-suggestions]");
      if (group) group.hidden = !self.suggestions.length;
    }
    // A suggestion becomes one of the annotator's spans, still naming it (`suggestion`).
    function take(sg, severity, edit) {
      sg.state = "taken";
      var span = {start: sg.start, end: sg.end, severity: severity, missing: sg.missing, suggestion: sg.position};
      self.spans = self.spans.filter(function (s) {
        return s.missing || span.missing || s.end <= span.start || s.start >= span.end;
      });
      self.spans.push(span);
      sortSpans();
      editing = edit ? self.spans.indexOf(span) : -1;
      selectedSpan = editing;
      render();
      unit.changed();
      say(edit ? "Editing the suggestion: select its new extent, then a severity."
        : severity === sg.severity ? "Suggestion accepted." : "Suggestion accepted as " + severity + ".");
    }
    function drop(sg) {
      sg.state = "deleted";
      render();
      unit.changed();
      say("Suggestion deleted.");
    }
    // The pending suggestion under the keyboard's word cursor, if any.
    function suggestionAtCursor() {
      var t = tokens[cursor];
      if (!t) return null;
      return self.pending().filter(function (sg) { return !sg.missing && sg.start < t.end && t.start < sg.end; })[0] || null;
    }
    function sortSpans() {
      self.spans.sort(function (x, y) { return (x.missing ? 1e12 : x.start) - (y.missing ? 1e12 : y.start); });
    }
    function removeSpan(index) {
      var gone = self.spans[index];
      if (gone && gone.suggestion !== undefined) {
        // Removing a span that came from a suggestion deletes the suggestion.
        self.suggestions.forEach(function (sg) { if (sg.position === gone.suggestion) sg.state = "deleted"; });
      }
      editing = -1;
      self.spans.splice(index, 1);
      selectedSpan = -1;
      render();
      unit.changed();
      say("Error removed from " + name + ".");
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
    // `extra`: more fields of the span (MQM: its category); `given`: the range to mark, else the
    // current selection.
    function mark(severity, extra, given) {
      var range = given || currentRange();
      if (!range) { say("Select some text first."); return; }
      var fresh = Object.assign({start: range.start, end: range.end, severity: severity, missing: false}, extra);
      if (editing >= 0 && self.spans[editing]) {
        // The suggestion being edited takes the new extent and severity.
        fresh.suggestion = self.spans[editing].suggestion;
        self.spans.splice(editing, 1);
        editing = -1;
      }
      // A new span replaces the parts of older spans it overlaps.
      self.spans = self.spans.filter(function (s) { return s.missing || s.end <= range.start || s.start >= range.end; });
      self.spans.push(fresh);
      sortSpans();
      selection = null;
      anchor = null;
      selectedSpan = -1;
      window.getSelection().removeAllRanges();
      render();
      unit.changed();
      say("Marked a " + severity + " error" + (extra && extra.category ? " (" + extra.category + ")" : "") +
        " in " + name + ".");
    }
    function missingAsk(open) {
      var ask = card.querySelector("[data-missing-ask]");
      askingMissing = Boolean(open && ask);
      if (!ask) return;
      ask.hidden = !askingMissing;
      if (askingMissing) {
        var button = ask.querySelector("[data-missing-severity]");
        if (button) button.focus();
        say("How severe is the content missing from " + name + "? Choose a severity (1-" +
          unit.config.severities.length + "), or Esc.");
      }
    }
    function addMissing(severity, extra) {
      missingAsk(false);
      self.spans.push(Object.assign({start: null, end: null, severity: severity, missing: true}, extra));
      render();
      unit.changed();
      say("Added a " + severity + " missing-content marker" +
        (extra && extra.category ? " (" + extra.category + ")" : "") + " to " + name + ".");
      if (textNode) textNode.focus({preventScroll: true});
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
    // one without re-rendering (that would drop the selection still being dragged).
    self.selectionChanged = function (sel) {
      if (!textNode.contains(sel.anchorNode) || !textNode.contains(sel.focusNode)) return;
      var range = rangeOf(sel);
      if (!range) return;
      selection = range;
      setCurrent(position, false);
      say("Selected “" + chars.slice(range.start, range.end).join("") + "” in " + name + ": choose a severity.");
    };
    function onMouseUp() {
      setCurrent(position, false);
      var sel = window.getSelection();
      if (!sel || sel.rangeCount === 0) return;
      if (sel.isCollapsed) {
        var target = sel.anchorNode && sel.anchorNode.parentNode;
        selection = null;
        if (target && target.dataset && target.dataset.span !== undefined) {
          selectedSpan = Number(target.dataset.span);
          say("Selected error " + (selectedSpan + 1) + " of " + name + ": change its severity or remove it below.");
        }
        render();
        return;
      }
      var range = rangeOf(sel);
      if (!range) return;
      selection = range;
      say("Selected “" + chars.slice(range.start, range.end).join("") + "” in " + name + ": choose a severity.");
      render();
    }
    // The keys of one output: arrows move a word cursor, Shift extends the selection, 1-n mark a
    // severity, M a missing-content marker, Del removes. True when handled.
    self.keydown = function (event) {
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
        var rtl = textNode && window.getComputedStyle(textNode).direction === "rtl";
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
          index = self.spans.findIndex(function (s) { return !s.missing && s.start < t.end && t.start < s.end; });
        }
        if (index >= 0) removeSpan(index);
        else if (suggested) drop(suggested);
        return true;
      }
      return false;
    };
    self.render = render;
    // `states`: the suggestions' states saved in the draft; `decided`: a revision, where the
    // stored answer decided every suggestion (named by a span, or deleted).
    self.restore = function (list, states, decided) {
      self.spans = Array.isArray(list) ? list.filter(function (s) {
        return s && (s.missing || (s.start >= 0 && s.end <= chars.length && s.start < s.end));
      }) : [];
      states = Array.isArray(states) ? states : [];
      self.suggestions.forEach(function (sg, k) {
        if (states[k] === "taken" || states[k] === "deleted") sg.state = states[k];
        if (decided) {
          var named = self.spans.some(function (s) { return s.suggestion === sg.position; });
          sg.state = named ? "taken" : "deleted";
        }
      });
    };
    self.states = function () { return self.suggestions.map(function (sg) { return sg.state; }); };
    self.answerSpans = function () {
      return self.spans.map(function (s) {
        var out = s.missing ? {missing: true, severity: s.severity} : {start: s.start, end: s.end, severity: s.severity};
        if (s.suggestion !== undefined) out.suggestion = s.suggestion;
        if (s.category !== undefined) out.category = s.category; // MQM
        return out;
      });
    };
    // For the MQM section: the marker's pending selection, held (shown) while its category and
    // severity are asked, and its marking functions.
    self.name = name;
    self.chars = chars;
    self.currentRange = currentRange;
    self.hold = function (range) { selection = range; render(); };
    self.mark = mark;
    self.addMissing = addMissing;

    if (textNode) textNode.addEventListener("mouseup", onMouseUp);
    card.querySelectorAll("[data-severity]").forEach(function (button) {
      button.addEventListener("mousedown", function (event) { event.preventDefault(); });
      button.addEventListener("click", function () { setCurrent(position, false); mark(button.dataset.severity); });
    });
    card.querySelectorAll("[data-missing-open]").forEach(function (button) {
      button.addEventListener("click", function () { setCurrent(position, false); missingAsk(true); });
    });
    card.querySelectorAll("[data-missing-severity]").forEach(function (button) {
      button.addEventListener("click", function () { addMissing(button.dataset.missingSeverity); });
    });
    card.querySelectorAll("[data-missing-cancel]").forEach(function (button) {
      button.addEventListener("click", function () { missingAsk(false); say("No missing content added."); });
    });
    card.addEventListener("focusin", function () { setCurrent(position, false); });
  }

  // The output the keys act on; `focus` moves the keyboard focus to its text.
  function setCurrent(position, focus) {
    if (!markers.length) return;
    current = Math.max(0, Math.min(markers.length - 1, position));
    if (markers.length > 1) {
      markers.forEach(function (m, i) { m.card.classList.toggle("active", i === current); });
    }
    var m = markers[current];
    if (focus && m.text) {
      m.text.focus({preventScroll: true});
      m.card.scrollIntoView({block: "nearest"});
      say("Output " + (current + 1) + " of " + markers.length + ".");
    }
  }
  function onSelectionChange() {
    var sel = window.getSelection();
    if (!sel || sel.rangeCount === 0 || sel.isCollapsed) return;
    markers.forEach(function (m) { if (m.text) m.selectionChanged(sel); });
  }
  function spansByOutput() {
    var out = {};
    markers.forEach(function (m) { out[m.output.id] = m.spans; });
    return out;
  }

  var behaviour = {
    init: function (shared) {
      // Once a unit: the page draws each next unit in place of the one sent (annotate.js).
      unit = shared;
      markers = [];
      current = 0;
      warned = false;
      unit.root.querySelectorAll("[data-span-card]").forEach(function (card) {
        var id = card.dataset.output;
        var position = unit.config.outputs.findIndex(function (o) { return String(o.id) === id; });
        if (position < 0) return;
        markers.push(new Marker(card, unit.config.outputs[position], markers.length));
      });
      if (!listening) document.addEventListener("selectionchange", onSelectionChange);
      listening = true;
    },
    collect: function (shared) {
      var byId = {};
      markers.forEach(function (m) { byId[m.output.id] = m; });
      return shared.scores(function (answer) {
        var m = byId[answer.output];
        answer.spans = m ? m.answerSpans() : [];
      });
    },
    // A score below 66 ("flawed" or worse) for an output with no error marked: warn once, send on
    // the next try.
    check: function (result) {
      // ESA^AI: every suggestion is decided before the unit is sent.
      var open = 0, where = [];
      markers.forEach(function (m, i) {
        var k = m.pending().length;
        open += k;
        if (k) where.push(i + 1);
      });
      var note = document.getElementById("esa-pending");
      if (note) note.hidden = !open;
      if (open) {
        if (note) note.textContent = open + " AI suggestion" + (open > 1 ? "s are" : " is") + " still open" +
          (markers.length > 1 ? " (output " + where.join(", ") + ")" : "") +
          ": accept, edit or delete each before sending.";
        say("Decide on every AI suggestion first.");
        return false;
      }
      var bare = {};
      markers.forEach(function (m, i) { if (!m.spans.length) bare[m.output.id] = i + 1; });
      var low = [];
      result.judgements.forEach(function (j) {
        if (j.score < 66 && bare[j.output] && low.indexOf(bare[j.output]) < 0) low.push(bare[j.output]);
      });
      if (!warned && low.length) {
        var warning = document.getElementById("esa-warning");
        var which = document.getElementById("esa-warning-outputs");
        if (which) which.textContent = low.sort().join(", ");
        if (warning) warning.hidden = false;
        warned = true;
        return false;
      }
      return true;
    },
    changed: function () {
      warned = false;
      var note = document.getElementById("esa-pending");
      if (note && !markers.some(function (m) { return m.pending().length; })) note.hidden = true;
      var warning = document.getElementById("esa-warning");
      if (warning) warning.hidden = true;
    },
    // The keys work on the current output's text (no question rows); S goes to its score.
    keydown: function (event) {
      var m = markers[current];
      if (!m) return false;
      var key = event.key;
      var target = event.target;
      var onSlider = target && target.tagName === "INPUT" && target.type === "range";
      if (m.keydown(event)) return true;
      if (key === "s" || key === "S") {
        var slider = m.card.querySelector("input[type=range]") || unit.form.querySelector("input[type=range]");
        if (slider) slider.focus();
        return true;
      }
      if (markers.length > 1) {
        if (key === "t" || key === "T") { setCurrent(current, true); return true; }
        if (!onSlider && (key === "ArrowDown" || key === "ArrowUp")) {
          setCurrent(current + (key === "ArrowDown" ? 1 : -1), true);
          return true;
        }
      }
      return false;
    },
    snapshot: function (draft) {
      draft.spans_by_output = spansByOutput();
      draft.spans = markers.length ? markers[0].spans : [];
      var states = {};
      markers.forEach(function (m) { if (m.suggestions.length) states[m.output.id] = m.states(); });
      draft.suggestion_states_by_output = states;
      draft.suggestionStates = markers.length ? markers[0].states() : [];
    },
    restore: function (draft) {
      var by = draft.spans_by_output;
      var states = draft.suggestion_states_by_output;
      var decided = Boolean(draft.suggestionsDecided);
      markers.forEach(function (m, i) {
        var mine = states && typeof states === "object" ? states[m.output.id]
          : i === 0 ? draft.suggestionStates : null;
        if (by && typeof by === "object") m.restore(by[m.output.id], mine, decided);
        else if (i === 0) m.restore(draft.spans, mine, decided); // a draft saved before several outputs had spans
        else m.restore([], mine, decided);
      });
    },
    ready: function () {
      markers.forEach(function (m) { m.render(); });
      setCurrent(0, false);
      if (markers.length && markers[0].text) markers[0].text.focus({preventScroll: true});
    }
  };
  window.Annotate.register("esa", behaviour);
  window.Annotate.register("cesa", behaviour);

  // ---- MQM ------------------------------------------------------------------------------------
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
      markers.forEach(mqmAttach);
    },
    // The spans are the whole answer (none: no error), the same for every criterion.
    collect: function (shared) {
      var judgements = [];
      markers.forEach(function (m) {
        shared.config.criteria.forEach(function (criterion) {
          judgements.push({criterion: criterion.name, output: m.output.id, spans: m.answerSpans()});
        });
      });
      return {missing: [], judgements: judgements};
    },
    check: function () {
      if (markers.some(function (m) { return m.errorPending(); })) {
        unit.showErrors(["Finish the error being added (choose its category and severity), or press Esc."]);
        return false;
      }
      return true;
    },
    // The current card's keys only (no score to go to).
    keydown: function (event) {
      var m = markers[current];
      return m ? m.keydown(event) : false;
    }
  }));
})();
