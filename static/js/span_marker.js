// The span marker of the span protocols (ESA, contrastive ESA, MQM: static/js/protocols/esa.js,
// cesa.js, mqm.js, each loaded after this file): error spans marked in an output with the mouse, the
// keyboard or a touch screen's selection handles. No build step: this file sets
// `window.SpanMarker` (and `module.exports` under Node, where tests/js/ test its pure part).
//
// Three layers, so the arithmetic can be tested without a browser:
// - `core`: pure functions (code-point offsets, word tokens, span lists); no DOM.
// - `Marker(card, output, position, page)`: one output card's marker (its text, the severity
//   buttons, the missing-content question, the span list), the DOM glue around `core`.
// - `page()`: the protocol behaviour of a page of span cards for window.Annotate.register (one
//   marker per [data-span-card], the current card, the draft, the checks before sending); a
//   protocol module registers it as it is (ESA, cESA) or wraps it (MQM).
//
// Spans are kept in code points, as the server stores them, and travel in the draft; a low score
// with no span is warned about once before sending. Phones select with the system's handles (no
// mouseup): the selection is read on `selectionchange`. Right-to-left outputs (dir="auto") keep
// logical offsets; the arrow keys follow the text's direction. "Missing content" asks for its
// severity before it is added. Several cards (cESA): Up / Down (or a click) move between the
// outputs, S goes to the current output's score, T back to its text.
// ESA^AI: an output may come with suggested spans (`suggestions`, no source named), listed in its
// card. Each is pending until the annotator accepts it (a span that keeps `suggestion: k`), edits
// it (its severity, or a new extent marked while editing) or deletes it (A / E / Delete at the word
// cursor); a unit with a pending suggestion is not sent. The server derives accepted / edited /
// deleted / added from that.
(function (root) {
  "use strict";

  // ---- core: no DOM ------------------------------------------------------------------------------

  // A text as code points (what the server's offsets count; a UTF-16 index would split emoji).
  function codePoints(text) { return Array.from(text || ""); }

  // The words of a text (runs of non-space), as [start, end) in code points.
  function wordTokens(text) {
    var tokens = [], re = /\S+/gu, joined = String(text || ""), match;
    while ((match = re.exec(joined)) !== null) {
      // Regex indices are UTF-16 units: convert.
      var first = Array.from(joined.slice(0, match.index)).length;
      tokens.push({start: first, end: first + Array.from(match[0]).length});
    }
    return tokens;
  }

  // A selection point inside a rendered piece of the text, in code points of the whole output:
  // the piece's first code point, plus the code points before `offset` (a UTF-16 offset, as the
  // DOM gives it) in the piece's text node; `nodeText` null when the point is on the element.
  function pieceOffset(pieceStart, nodeText, offset) {
    return pieceStart + (nodeText === null || nodeText === undefined ? 0 : Array.from(nodeText.slice(0, offset)).length);
  }

  // The selection between two points (either order: a selection dragged backwards, or in a
  // right-to-left text, has its focus first) as [start, end), trimmed of white space; null when
  // nothing but white space (or a point outside the text) is selected.
  function trimRange(chars, a, b) {
    if (a === null || a === undefined || b === null || b === undefined) return null;
    var start = Math.max(0, Math.min(a, b)), end = Math.min(chars.length, Math.max(a, b));
    while (start < end && /\s/.test(chars[start])) start++;
    while (end > start && /\s/.test(chars[end - 1])) end--;
    return start < end ? {start: start, end: end} : null;
  }

  // The keyboard's selection: the words from the anchor (null: none) to the cursor.
  function tokenRange(tokens, anchor, cursor) {
    if (!tokens.length) return null;
    var a = anchor === null || anchor === undefined ? cursor : anchor;
    var lo = Math.min(a, cursor), hi = Math.max(a, cursor);
    return {start: tokens[lo].start, end: tokens[hi].end};
  }

  // Which way an arrow key moves the word cursor: in a right-to-left text the next word is on the left.
  function tokenStep(key, rtl) {
    if (key !== "ArrowRight" && key !== "ArrowLeft") return 0;
    return (key === "ArrowRight") !== Boolean(rtl) ? 1 : -1;
  }

  // Where the text is cut into pieces for rendering: 0, the end, and both ends of every range in
  // `lists` (tokens, spans, suggestions, the selection; missing-content spans have none), sorted.
  function cutPoints(length, lists) {
    var cuts = {0: true};
    cuts[length] = true;
    lists.forEach(function (list) {
      (list || []).forEach(function (r) { if (r && !r.missing) { cuts[r.start] = true; cuts[r.end] = true; } });
    });
    return Object.keys(cuts).map(Number).sort(function (a, b) { return a - b; });
  }

  // The span of `list` that covers the piece [s, e): the last one (the newest drawn on top) or the
  // first; -1 when none.
  function coveringIndex(list, s, e, last) {
    var found = -1;
    for (var i = 0; i < list.length; i++) {
      var span = list[i];
      if (!span.missing && span.start <= s && e <= span.end) {
        found = i;
        if (!last) break;
      }
    }
    return found;
  }

  // The first span of `list` that shares a code point with `range`; -1 when none.
  function overlappingIndex(list, range) {
    for (var i = 0; i < list.length; i++) {
      var s = list[i];
      if (!s.missing && s.start < range.end && range.start < s.end) return i;
    }
    return -1;
  }

  // Spans in reading order, missing-content markers last.
  function spansSort(spans) {
    return spans.sort(function (x, y) { return (x.missing ? 1e12 : x.start) - (y.missing ? 1e12 : y.start); });
  }

  // A new list with `fresh` added: it replaces every older span it overlaps (spans never overlap,
  // so one character has one severity); a missing-content marker replaces nothing.
  function spansAdd(spans, fresh) {
    var kept = spans.filter(function (s) {
      return s.missing || fresh.missing || s.end <= fresh.start || s.start >= fresh.end;
    });
    kept.push(fresh);
    return spansSort(kept);
  }

  // Spans read back from a draft: those that still fit the text (a draft is the browser's, and
  // the unit's text may have been replaced since).
  function spansRestore(list, length) {
    return Array.isArray(list) ? list.filter(function (s) {
      return s && (s.missing || (s.start >= 0 && s.end <= length && s.start < s.end));
    }) : [];
  }

  // The spans as the answer sends them (the REST API's span shape).
  function spansAnswer(spans) {
    return spans.map(function (s) {
      var out = s.missing ? {missing: true, severity: s.severity} : {start: s.start, end: s.end, severity: s.severity};
      if (s.suggestion !== undefined) out.suggestion = s.suggestion;
      if (s.category !== undefined) out.category = s.category; // MQM
      if (s.note) out.note = s.note; // the campaign's free-text field per span (option span_text)
      return out;
    });
  }

  var core = {
    codePoints: codePoints, wordTokens: wordTokens, pieceOffset: pieceOffset, trimRange: trimRange,
    tokenRange: tokenRange, tokenStep: tokenStep, cutPoints: cutPoints, coveringIndex: coveringIndex,
    overlappingIndex: overlappingIndex, spansSort: spansSort, spansAdd: spansAdd, spansRestore: spansRestore,
    spansAnswer: spansAnswer
  };

  // ---- the DOM glue: one output card -------------------------------------------------------------

  // The span marker of one output card: the card holds [data-esa-text] (the output), the
  // severity buttons, the missing-content question and the span list, all found inside it.
  // `page`: the page it belongs to (`unit`, `say`, `setCurrent`).
  function Marker(card, output, position, page) {
    var self = this;
    var textNode = card.querySelector("[data-esa-text]");
    var chars = codePoints(output.text);
    var tokens = wordTokens(output.text); // word tokens: {start, end} in code points
    var cursor = 0, anchor = null; // keyboard selection over tokens
    var selection = null; // {start, end} pending selection, code points
    var selectedSpan = -1;
    var askingMissing = false;
    var many = page.unit.config.outputs.length > 1;
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

    function spanText(span) {
      return span.missing ? "[missing content]" : chars.slice(span.start, span.end).join("");
    }
    function render() {
      if (!textNode) return;
      var points = cutPoints(chars.length, [tokens, self.spans, self.pending(), selection ? [selection] : []]);
      textNode.textContent = "";
      var cursorToken = tokens[cursor];
      for (var i = 0; i + 1 < points.length; i++) {
        var s = points[i], e = points[i + 1];
        var piece = document.createElement("span");
        piece.textContent = chars.slice(s, e).join("");
        piece.dataset.s = s;
        piece.dataset.e = e;
        var covering = coveringIndex(self.spans, s, e, true);
        if (covering >= 0) {
          piece.className = "err sev-" + self.spans[covering].severity + (covering === selectedSpan ? " picked" : "");
          piece.dataset.span = covering;
          piece.title = self.spans[covering].severity + " error" +
            (self.spans[covering].category ? ": " + self.spans[covering].category : "");
        } else {
          var suggested = self.pending()[coveringIndex(self.pending(), s, e, false)];
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
        if (page.unit.config.span_text) {
          // The campaign's free-text field per span: typed text is kept on the span (sent as `note`).
          var note = document.createElement("input");
          note.type = "text";
          note.className = "span-note";
          note.maxLength = page.unit.config.text_max_length || 500;
          note.placeholder = page.unit.config.span_text;
          note.value = span.note || "";
          note.setAttribute("aria-label", page.unit.config.span_text + " (" + prefix + "error " + (index + 1) + ")");
          note.addEventListener("input", function () { span.note = note.value; page.unit.changed(); });
          li.appendChild(note);
        }
        var select = document.createElement("select");
        select.setAttribute("aria-label", "Severity of " + prefix + "error " + (index + 1));
        page.unit.config.severities.forEach(function (severity) {
          var option = document.createElement("option");
          option.value = severity;
          option.textContent = severity;
          option.selected = severity === span.severity;
          select.appendChild(option);
        });
        select.addEventListener("change", function () { span.severity = select.value; render(); page.unit.changed(); });
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
        page.unit.config.severities.forEach(function (severity) {
          var option = document.createElement("option");
          option.value = severity;
          option.textContent = severity;
          option.selected = severity === sg.severity;
          select.appendChild(option);
        });
        select.addEventListener("change", function () { page.setCurrent(position, false); take(sg, select.value, false); });
        li.appendChild(select);
        li.appendChild(button("Accept", "Accept AI suggestion " + n + of, function () {
          page.setCurrent(position, false);
          take(sg, sg.severity, false);
        }));
        if (!sg.missing) {
          li.appendChild(button("Edit", "Edit the extent of AI suggestion " + n + of, function () {
            page.setCurrent(position, false);
            take(sg, sg.severity, true);
          }));
        }
        li.appendChild(button("Delete", "Delete AI suggestion " + n + of, function () {
          page.setCurrent(position, false);
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
      self.spans = spansAdd(self.spans, span);
      editing = edit ? self.spans.indexOf(span) : -1;
      selectedSpan = editing;
      render();
      page.unit.changed();
      page.say(edit ? "Editing the suggestion: select its new extent, then a severity."
        : severity === sg.severity ? "Suggestion accepted." : "Suggestion accepted as " + severity + ".");
    }
    function drop(sg) {
      sg.state = "deleted";
      render();
      page.unit.changed();
      page.say("Suggestion deleted.");
    }
    // The pending suggestion under the keyboard's word cursor, if any.
    function suggestionAtCursor() {
      var t = tokens[cursor];
      if (!t) return null;
      return self.pending()[overlappingIndex(self.pending(), t)] || null;
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
      page.unit.changed();
      page.say("Error removed from " + name + ".");
    }
    function keyboardSelection() { return tokenRange(tokens, anchor, cursor); }
    function currentRange() {
      var range = selection || keyboardSelection();
      return range && range.start < range.end ? range : null;
    }
    // `extra`: more fields of the span (MQM: its category); `given`: the range to mark, else the
    // current selection.
    function mark(severity, extra, given) {
      var range = given || currentRange();
      if (!range) { page.say("Select some text first."); return; }
      var fresh = Object.assign({start: range.start, end: range.end, severity: severity, missing: false}, extra);
      if (editing >= 0 && self.spans[editing]) {
        // The suggestion being edited takes the new extent and severity.
        fresh.suggestion = self.spans[editing].suggestion;
        self.spans.splice(editing, 1);
        editing = -1;
      }
      self.spans = spansAdd(self.spans, fresh);
      selection = null;
      anchor = null;
      selectedSpan = -1;
      window.getSelection().removeAllRanges();
      render();
      page.unit.changed();
      page.say("Marked a " + severity + " error" + (extra && extra.category ? " (" + extra.category + ")" : "") +
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
        page.say("How severe is the content missing from " + name + "? Choose a severity (1-" +
          page.unit.config.severities.length + "), or Esc.");
      }
    }
    function addMissing(severity, extra) {
      missingAsk(false);
      self.spans.push(Object.assign({start: null, end: null, severity: severity, missing: true}, extra));
      render();
      page.unit.changed();
      page.say("Added a " + severity + " missing-content marker" +
        (extra && extra.category ? " (" + extra.category + ")" : "") + " to " + name + ".");
      if (textNode) textNode.focus({preventScroll: true});
    }
    // A DOM point (node, offset) of the selection in code points of the output: the rendered
    // pieces carry their first code point as data-s.
    function offsetIn(node, offset) {
      if (!node) return null;
      var element = node.nodeType === 3 ? node.parentNode : node;
      if (!element || !element.dataset || element.dataset.s === undefined) return null;
      return pieceOffset(Number(element.dataset.s), node.nodeType === 3 ? node.textContent : null, offset);
    }
    // The selection's [start, end) in code points, trimmed of white space; null outside the text.
    function rangeOf(sel) {
      return trimRange(chars, offsetIn(sel.anchorNode, sel.anchorOffset), offsetIn(sel.focusNode, sel.focusOffset));
    }
    // Touch screens: the selection grows with the handles and no mouseup comes; keep the latest
    // one without re-rendering (that would drop the selection still being dragged).
    self.selectionChanged = function (sel) {
      if (!textNode || !textNode.contains(sel.anchorNode) || !textNode.contains(sel.focusNode)) return;
      var range = rangeOf(sel);
      if (!range) return;
      selection = range;
      page.setCurrent(position, false);
      page.say("Selected “" + chars.slice(range.start, range.end).join("") + "” in " + name + ": choose a severity.");
    };
    function onMouseUp() {
      page.setCurrent(position, false);
      var sel = window.getSelection();
      if (!sel || sel.rangeCount === 0) return;
      if (sel.isCollapsed) {
        var target = sel.anchorNode && sel.anchorNode.parentNode;
        selection = null;
        if (target && target.dataset && target.dataset.span !== undefined) {
          selectedSpan = Number(target.dataset.span);
          page.say("Selected error " + (selectedSpan + 1) + " of " + name + ": change its severity or remove it below.");
        }
        render();
        return;
      }
      var range = rangeOf(sel);
      if (!range) return;
      selection = range;
      page.say("Selected “" + chars.slice(range.start, range.end).join("") + "” in " + name + ": choose a severity.");
      render();
    }
    // The keys of one output: arrows move a word cursor, Shift extends the selection, 1-n mark a
    // severity, M a missing-content marker, Del removes. True when handled.
    self.keydown = function (event) {
      var key = event.key;
      var target = event.target;
      var severities = page.unit.config.severities;
      var digit = Number(key);
      if (askingMissing) {
        if (digit >= 1 && digit <= severities.length) { addMissing(severities[digit - 1]); return true; }
        if (key === "Escape") { missingAsk(false); page.say("No missing content added."); return true; }
        return false; // Tab, Enter on a focused choice: the browser's
      }
      if (target && target.tagName === "INPUT" && target.type === "range" && /^Arrow/.test(key)) return false;
      if (key === "ArrowRight" || key === "ArrowLeft") {
        if (!tokens.length) return false;
        if (event.shiftKey) { if (anchor === null) anchor = cursor; } else { anchor = null; }
        // In a right-to-left text the next word is on the left.
        var rtl = textNode && window.getComputedStyle(textNode).direction === "rtl";
        var step = tokenStep(key, rtl);
        cursor = Math.max(0, Math.min(tokens.length - 1, cursor + step));
        selection = event.shiftKey ? keyboardSelection() : null;
        render();
        var here = suggestionAtCursor();
        page.say((event.shiftKey ? "Selected “" + chars.slice(selection.start, selection.end).join("") + "”"
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
          index = overlappingIndex(self.spans, t);
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
      self.spans = spansRestore(list, chars.length);
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
    self.answerSpans = function () { return spansAnswer(self.spans); };
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
      button.addEventListener("click", function () { page.setCurrent(position, false); mark(button.dataset.severity); });
    });
    card.querySelectorAll("[data-missing-open]").forEach(function (button) {
      button.addEventListener("click", function () { page.setCurrent(position, false); missingAsk(true); });
    });
    card.querySelectorAll("[data-missing-severity]").forEach(function (button) {
      button.addEventListener("click", function () { addMissing(button.dataset.missingSeverity); });
    });
    card.querySelectorAll("[data-missing-cancel]").forEach(function (button) {
      button.addEventListener("click", function () { missingAsk(false); page.say("No missing content added."); });
    });
    card.addEventListener("focusin", function () { page.setCurrent(position, false); });
  }

  // ---- the page: every span card of a unit ------------------------------------------------------

  // A fresh behaviour for window.Annotate.register, with its state (`unit`, `markers`, `current`)
  // on the returned object so a protocol module can wrap it (MQM: protocols/mqm.js).
  function page() {
    var p = {unit: null, markers: [], current: 0, behaviour: null};
    var warned = false;
    var listening = false; // the document's selectionchange listener, added once for every unit

    p.say = function (text) { p.unit.say(text); };
    // The output the keys act on; `focus` moves the keyboard focus to its text.
    p.setCurrent = function (position, focus) {
      var markers = p.markers;
      if (!markers.length) return;
      p.current = Math.max(0, Math.min(markers.length - 1, position));
      if (markers.length > 1) {
        markers.forEach(function (m, i) { m.card.classList.toggle("active", i === p.current); });
      }
      var m = markers[p.current];
      if (focus && m.text) {
        m.text.focus({preventScroll: true});
        m.card.scrollIntoView({block: "nearest"});
        p.say("Output " + (p.current + 1) + " of " + markers.length + ".");
      }
    };
    function onSelectionChange() {
      var sel = window.getSelection();
      if (!sel || sel.rangeCount === 0 || sel.isCollapsed) return;
      p.markers.forEach(function (m) { if (m.text) m.selectionChanged(sel); });
    }
    function spansByOutput() {
      var out = {};
      p.markers.forEach(function (m) { out[m.output.id] = m.spans; });
      return out;
    }

    p.behaviour = {
      init: function (shared) {
        // Once a unit: the page draws each next unit in place of the one sent (annotate.js).
        p.unit = shared;
        p.markers = [];
        p.current = 0;
        warned = false;
        shared.root.querySelectorAll("[data-span-card]").forEach(function (card) {
          var id = card.dataset.output;
          var position = shared.config.outputs.findIndex(function (o) { return String(o.id) === id; });
          if (position < 0) return;
          p.markers.push(new Marker(card, shared.config.outputs[position], p.markers.length, p));
        });
        if (!listening) document.addEventListener("selectionchange", onSelectionChange);
        listening = true;
      },
      collect: function (shared) {
        var byId = {};
        p.markers.forEach(function (m) { byId[m.output.id] = m; });
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
        p.markers.forEach(function (m, i) {
          var k = m.pending().length;
          open += k;
          if (k) where.push(i + 1);
        });
        var note = document.getElementById("esa-pending");
        if (note) note.hidden = !open;
        if (open) {
          if (note) note.textContent = open + " AI suggestion" + (open > 1 ? "s are" : " is") + " still open" +
            (p.markers.length > 1 ? " (output " + where.join(", ") + ")" : "") +
            ": accept, edit or delete each before sending.";
          p.say("Decide on every AI suggestion first.");
          return false;
        }
        var bare = {};
        p.markers.forEach(function (m, i) { if (!m.spans.length) bare[m.output.id] = i + 1; });
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
        if (note && !p.markers.some(function (m) { return m.pending().length; })) note.hidden = true;
        var warning = document.getElementById("esa-warning");
        if (warning) warning.hidden = true;
      },
      // The keys work on the current output's text (no question rows); S goes to its score.
      keydown: function (event) {
        var m = p.markers[p.current];
        if (!m) return false;
        var key = event.key;
        var target = event.target;
        var onSlider = target && target.tagName === "INPUT" && target.type === "range";
        if (m.keydown(event)) return true;
        if (key === "s" || key === "S") {
          var slider = m.card.querySelector("input[type=range]") || p.unit.form.querySelector("input[type=range]");
          if (slider) slider.focus();
          return true;
        }
        if (p.markers.length > 1) {
          if (key === "t" || key === "T") { p.setCurrent(p.current, true); return true; }
          if (!onSlider && (key === "ArrowDown" || key === "ArrowUp")) {
            p.setCurrent(p.current + (key === "ArrowDown" ? 1 : -1), true);
            return true;
          }
        }
        return false;
      },
      snapshot: function (draft) {
        var markers = p.markers;
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
        p.markers.forEach(function (m, i) {
          var mine = states && typeof states === "object" ? states[m.output.id]
            : i === 0 ? draft.suggestionStates : null;
          if (by && typeof by === "object") m.restore(by[m.output.id], mine, decided);
          else if (i === 0) m.restore(draft.spans, mine, decided); // a draft saved before several outputs had spans
          else m.restore([], mine, decided);
        });
      },
      ready: function () {
        var markers = p.markers;
        markers.forEach(function (m) { m.render(); });
        p.setCurrent(0, false);
        if (markers.length && markers[0].text) markers[0].text.focus({preventScroll: true});
      }
    };
    return p;
  }

  var api = {core: core, Marker: Marker, page: page};
  root.SpanMarker = api;
  if (typeof module === "object" && module.exports) module.exports = api;
})(typeof window !== "undefined" ? window : globalThis);
