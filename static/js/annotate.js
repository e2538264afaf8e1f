// The protocol pages (Likert / DA, RankME, pairwise, best-worst, ESA) and the set-up preview.
// The server renders every text; this script only adds behaviour: keyboard shortcuts, sliders
// that must be moved, the live RankME ranking, ESA error spans, the timer, autosave (in this
// browser at once, on the server a moment later) and the submission of the whole unit.
// Data is read with textContent / JSON, and written with textContent: never innerHTML.
(function () {
  "use strict";
  var configNode = document.getElementById("unit-config");
  var form = document.getElementById("unit-form");
  if (!configNode || !form) return;
  var config = JSON.parse(configNode.textContent);
  var protocol = config.protocol;
  var statusNode = document.getElementById("unit-status");
  var errorsNode = document.getElementById("unit-errors");
  var timerNode = document.getElementById("unit-timer");
  var storageKey = "workbench-draft-" + config.assignment;
  var rows = Array.prototype.slice.call(form.querySelectorAll("[data-row]"));
  var activeRow = 0;
  var elapsed = 0;
  var spans = []; // ESA: {start, end, severity, missing}
  var esaWarned = false;
  var submitting = false;

  // ---------------------------------------------------------------- helpers
  function say(text) { if (statusNode) statusNode.textContent = text; }
  function showErrors(list) {
    if (!errorsNode) return;
    errorsNode.textContent = "";
    if (!list || !list.length) { errorsNode.hidden = true; return; }
    list.forEach(function (message, i) {
      if (i) errorsNode.appendChild(document.createElement("br"));
      errorsNode.appendChild(document.createTextNode(message));
    });
    errorsNode.hidden = false;
  }
  function csrfToken() {
    var input = document.querySelector("input[name=csrfmiddlewaretoken]");
    if (input) return input.value;
    var match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }
  function post(url, body) {
    return fetch(url, {
      method: "POST", credentials: "same-origin",
      headers: {"Content-Type": "application/json", "X-CSRFToken": csrfToken()},
      body: JSON.stringify(body)
    });
  }
  function formatTime(ms) {
    var s = Math.floor(ms / 1000);
    return Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0");
  }

  // ---------------------------------------------------------------- rows and keys
  function setActive(index, focus) {
    if (!rows.length) return;
    activeRow = Math.max(0, Math.min(rows.length - 1, index));
    rows.forEach(function (row, i) { row.classList.toggle("active", i === activeRow); });
    var row = rows[activeRow];
    if (focus) {
      var target = row.querySelector("input[type=range]") || row.querySelector("input:checked") ||
        row.querySelector("input");
      if (target) target.focus({preventScroll: false});
    }
    row.scrollIntoView({block: "nearest"});
  }
  rows.forEach(function (row, i) {
    row.addEventListener("focusin", function () { setActive(i, false); });
    row.addEventListener("click", function () { setActive(i, false); });
  });

  function chooseInRow(key) {
    var row = rows[activeRow];
    if (!row) return false;
    var input = row.querySelector('input[data-key="' + key + '"]');
    if (!input) return false;
    input.checked = true;
    input.dispatchEvent(new Event("change", {bubbles: true}));
    if (activeRow < rows.length - 1) setActive(activeRow + 1, true);
    else input.focus();
    return true;
  }

  // ---------------------------------------------------------------- sliders
  function markTouched(slider) {
    slider.classList.remove("untouched");
    var out = slider.parentNode.querySelector(".slider-value");
    if (out) out.textContent = slider.value;
  }
  form.querySelectorAll("input[type=range]").forEach(function (slider) {
    ["input", "change"].forEach(function (type) {
      slider.addEventListener(type, function () { markTouched(slider); changed(); });
    });
  });

  // ---------------------------------------------------------------- RankME ranking
  function updateRanks() {
    if (protocol !== "rankme") return;
    config.criteria.forEach(function (criterion) {
      var entries = config.outputs.map(function (output) {
        var input = form.querySelector('[name="s-' + criterion.index + "-" + output.id + '"]');
        var value = input && input.value !== "" ? Number(input.value) : NaN;
        return {name: "s-" + criterion.index + "-" + output.id, value: value};
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

  // ---------------------------------------------------------------- ESA
  var esaText = document.getElementById("esa-text");
  var chars = [];
  var tokens = []; // word tokens: {start, end} in code points
  var cursor = 0, anchor = null; // keyboard selection over tokens
  var selection = null; // {start, end} pending selection, code points
  var selectedSpan = -1;
  if (protocol === "esa" && esaText) {
    chars = Array.from(config.outputs[0].text);
    var re = /\S+/gu, text = chars.join(""), match;
    // Word tokens in code points (regex indices are UTF-16 units: convert).
    while ((match = re.exec(text)) !== null) {
      var start = Array.from(text.slice(0, match.index)).length;
      tokens.push({start: start, end: start + Array.from(match[0]).length});
    }
  }
  function spanText(span) {
    return span.missing ? "[missing content]" : chars.slice(span.start, span.end).join("");
  }
  function renderEsa() {
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
        piece.title = spans[covering].severity + " error";
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
      li.appendChild(quote);
      var select = document.createElement("select");
      select.setAttribute("aria-label", "Severity of error " + (index + 1));
      config.severities.forEach(function (severity) {
        var option = document.createElement("option");
        option.value = severity;
        option.textContent = severity;
        option.selected = severity === span.severity;
        select.appendChild(option);
      });
      select.addEventListener("change", function () { span.severity = select.value; renderEsa(); changed(); });
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
  function removeSpan(index) {
    spans.splice(index, 1);
    selectedSpan = -1;
    renderEsa();
    changed();
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
    // A new span replaces the parts of older spans it overlaps.
    spans = spans.filter(function (s) { return s.missing || s.end <= range.start || s.start >= range.end; });
    spans.push({start: range.start, end: range.end, severity: severity, missing: false});
    spans.sort(function (x, y) { return (x.missing ? 1e12 : x.start) - (y.missing ? 1e12 : y.start); });
    selection = null;
    anchor = null;
    selectedSpan = -1;
    window.getSelection().removeAllRanges();
    renderEsa();
    changed();
    say("Marked a " + severity + " error.");
  }
  function addMissing() {
    spans.push({start: null, end: null, severity: config.severities[0], missing: true});
    renderEsa();
    changed();
    say("Added a missing-content marker (" + config.severities[0] + "); change its severity in the list.");
  }
  function offsetIn(node, offset) {
    var element = node.nodeType === 3 ? node.parentNode : node;
    if (!element || !element.dataset || element.dataset.s === undefined) return null;
    var within = node.nodeType === 3 ? Array.from(node.textContent.slice(0, offset)).length : 0;
    return Number(element.dataset.s) + within;
  }
  if (esaText) {
    esaText.addEventListener("mouseup", function () {
      var sel = window.getSelection();
      if (!sel || sel.rangeCount === 0) return;
      if (sel.isCollapsed) {
        var target = sel.anchorNode && sel.anchorNode.parentNode;
        selection = null;
        if (target && target.dataset && target.dataset.span !== undefined) {
          selectedSpan = Number(target.dataset.span);
          say("Selected error " + (selectedSpan + 1) + ": change its severity or remove it below.");
        }
        renderEsa();
        return;
      }
      var a = offsetIn(sel.anchorNode, sel.anchorOffset), b = offsetIn(sel.focusNode, sel.focusOffset);
      if (a === null || b === null) return;
      var start = Math.min(a, b), end = Math.max(a, b);
      while (start < end && /\s/.test(chars[start])) start++;
      while (end > start && /\s/.test(chars[end - 1])) end--;
      if (start >= end) return;
      selection = {start: start, end: end};
      say("Selected “" + chars.slice(start, end).join("") + "”: choose a severity.");
      renderEsa();
    });
    document.querySelectorAll("[data-severity]").forEach(function (button) {
      button.addEventListener("mousedown", function (event) { event.preventDefault(); });
      button.addEventListener("click", function () { mark(button.dataset.severity); });
    });
    var missingButton = document.getElementById("esa-missing");
    if (missingButton) missingButton.addEventListener("click", addMissing);
  }
  function esaKey(event) {
    var key = event.key;
    if (key === "ArrowRight" || key === "ArrowLeft") {
      if (!tokens.length) return false;
      if (event.shiftKey) { if (anchor === null) anchor = cursor; } else { anchor = null; }
      cursor = Math.max(0, Math.min(tokens.length - 1, cursor + (key === "ArrowRight" ? 1 : -1)));
      selection = event.shiftKey ? keyboardSelection() : null;
      renderEsa();
      say(event.shiftKey ? "Selected “" + chars.slice(selection.start, selection.end).join("") + "”"
        : "At “" + chars.slice(tokens[cursor].start, tokens[cursor].end).join("") + "”");
      return true;
    }
    var digit = Number(key);
    if (digit >= 1 && digit <= config.severities.length) { mark(config.severities[digit - 1]); return true; }
    if (key === "m" || key === "M") { addMissing(); return true; }
    if (key === "Delete" || key === "Backspace") {
      var index = selectedSpan;
      if (index < 0 && tokens[cursor]) {
        var t = tokens[cursor];
        index = spans.findIndex(function (s) { return !s.missing && s.start < t.end && t.start < s.end; });
      }
      if (index >= 0) removeSpan(index);
      return true;
    }
    if (key === "s" || key === "S") {
      var slider = form.querySelector("input[type=range]");
      if (slider) slider.focus();
      return true;
    }
    return false;
  }

  // ---------------------------------------------------------------- answers
  function valueOf(name) {
    var inputs = form.querySelectorAll('[name="' + name + '"]');
    if (!inputs.length) return null;
    var first = inputs[0];
    if (first.type === "radio") {
      var checked = form.querySelector('[name="' + name + '"]:checked');
      return checked ? checked.value : null;
    }
    if (first.type === "range") return first.classList.contains("untouched") ? null : first.value;
    return first.value === "" ? null : first.value;
  }
  function collect() {
    var judgements = [], missing = [];
    var perOutput = protocol === "likert" || protocol === "rankme" || protocol === "esa";
    config.criteria.forEach(function (criterion) {
      if (perOutput) {
        config.outputs.forEach(function (output, position) {
          var raw = valueOf("s-" + criterion.index + "-" + output.id);
          var label = criterion.name + (config.outputs.length > 1 ? " (output " + (position + 1) + ")" : "");
          if (raw === null) { missing.push(label); return; }
          var score = Number(raw);
          if (!isFinite(score)) { missing.push(label); return; }
          var answer = {criterion: criterion.name, output: output.id, score: score};
          if (protocol === "esa") answer.spans = spans.map(function (s) {
            return s.missing ? {missing: true, severity: s.severity} : {start: s.start, end: s.end, severity: s.severity};
          });
          judgements.push(answer);
        });
      } else if (protocol === "pairwise") {
        var winner = valueOf("w-" + criterion.index);
        if (winner === null) missing.push(criterion.name); else judgements.push({criterion: criterion.name, winner: winner});
      } else {
        var best = valueOf("b-" + criterion.index), worst = valueOf("x-" + criterion.index);
        if (best === null) missing.push(criterion.name + ": best");
        if (worst === null) missing.push(criterion.name + ": worst");
        if (best !== null && worst !== null) {
          judgements.push({criterion: criterion.name, best: Number(best), worst: Number(worst)});
        }
      }
    });
    return {judgements: judgements, missing: missing};
  }

  // ---------------------------------------------------------------- drafts
  function snapshot() {
    var fields = {}, touched = [];
    form.querySelectorAll("input[name]").forEach(function (input) {
      if (input.type === "radio") { if (input.checked) fields[input.name] = input.value; }
      else if (input.type === "range") { if (!input.classList.contains("untouched")) { fields[input.name] = input.value; touched.push(input.name); } }
      else if (input.value !== "") fields[input.name] = input.value;
    });
    return {v: 1, fields: fields, touched: touched, spans: spans, elapsed_ms: elapsed, saved_at: Date.now()};
  }
  function restore(draft) {
    if (!draft || draft.v !== 1) return false;
    Object.keys(draft.fields || {}).forEach(function (name) {
      form.querySelectorAll('[name="' + name + '"]').forEach(function (input) {
        if (input.type === "radio") input.checked = input.value === draft.fields[name];
        else input.value = draft.fields[name];
      });
    });
    (draft.touched || []).forEach(function (name) {
      var slider = form.querySelector('[name="' + name + '"]');
      if (slider) markTouched(slider);
    });
    spans = Array.isArray(draft.spans) ? draft.spans.filter(function (s) {
      return s && (s.missing || (s.start >= 0 && s.end <= chars.length && s.start < s.end));
    }) : [];
    elapsed = Number(draft.elapsed_ms) || 0;
    return true;
  }
  var serverTimer = null;
  function changed() {
    updateRanks();
    showErrors(null);
    esaWarned = false;
    var warning = document.getElementById("esa-warning");
    if (warning) warning.hidden = true;
    if (config.preview) return;
    try { window.localStorage.setItem(storageKey, JSON.stringify(snapshot())); } catch (e) { /* private mode */ }
    window.clearTimeout(serverTimer);
    serverTimer = window.setTimeout(saveToServer, 1500);
  }
  function saveToServer() {
    if (config.preview || submitting || !config.draft_url) return;
    post(config.draft_url, {draft: snapshot()}).then(function (response) {
      if (response.ok) say("Saved.");
    }).catch(function () { say("Saved in this browser (the server could not be reached)."); });
  }

  // ---------------------------------------------------------------- submit
  function submit() {
    if (submitting) return;
    var result = collect();
    if (result.missing.length) {
      showErrors(["Still to answer: " + result.missing.join(", ") + "."]);
      var firstEmpty = rows.findIndex(function (row) {
        return !row.querySelector("input:checked") && !row.querySelector("input[type=range]:not(.untouched)") &&
          !Array.prototype.some.call(row.querySelectorAll("input[type=number]"), function (i) { return i.value !== ""; });
      });
      if (firstEmpty >= 0) setActive(firstEmpty, true);
      return;
    }
    if (protocol === "bws" && result.judgements.some(function (j) { return j.best === j.worst; })) {
      showErrors(["Best and worst must be different outputs."]);
      return;
    }
    if (protocol === "esa" && !esaWarned && !spans.length &&
        result.judgements.some(function (j) { return j.score < 66; })) {
      var warning = document.getElementById("esa-warning");
      if (warning) warning.hidden = false;
      esaWarned = true;
      return;
    }
    var body = {judgements: result.judgements, shown_order: config.shown_order, time_spent_ms: Math.round(elapsed)};
    if (config.preview) {
      say("Preview: " + result.judgements.length + " answer(s) would be stored. Nothing was saved.");
      return;
    }
    submitting = true;
    say("Sending…");
    post(config.submit_url, body).then(function (response) {
      return response.json().catch(function () { return {}; }).then(function (data) {
        if (response.ok && data.retry) {
          // A tutorial unit answered wrongly: stay on it and show why (quality control).
          submitting = false;
          say("");
          showErrors(["Not the expected answer. " + (data.explanation || "") ].concat(data.problems || [])
            .concat(["Change your answer and submit again."]));
          if (errorsNode) { errorsNode.tabIndex = -1; errorsNode.focus(); }
          return;
        }
        if (response.ok) {
          try { window.localStorage.removeItem(storageKey); } catch (e) { /* ignore */ }
          say("Saved. Loading the next unit…");
          window.location.assign(data.next || window.location.href);
          return;
        }
        submitting = false;
        showErrors(data.errors || ["The server refused the unit (" + response.status + ")."]);
      });
    }).catch(function () {
      submitting = false;
      showErrors(["The server could not be reached; your answers are kept. Try again in a moment."]);
    });
  }
  form.addEventListener("submit", function (event) { event.preventDefault(); submit(); });
  form.addEventListener("change", changed);
  form.addEventListener("input", function (event) { if (event.target.type === "number") changed(); });

  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    var target = event.target;
    var tag = target && target.tagName;
    var textField = tag === "TEXTAREA" || tag === "SELECT" ||
      (tag === "INPUT" && /^(text|number|search|email|password)$/.test(target.type));
    if (target && target.closest && !target.closest("#unit") && tag !== "BODY") return;
    if (event.key === "Enter") {
      if (textField || tag === "BUTTON" || tag === "A" || tag === "SUMMARY") return; // the browser handles these
      event.preventDefault();
      submit();
      return;
    }
    if (textField) return;
    var onSlider = tag === "INPUT" && target.type === "range";
    if (protocol === "esa") {
      if (onSlider && /^Arrow/.test(event.key)) return;
      if (esaKey(event)) event.preventDefault();
      return;
    }
    if (!onSlider && (event.key === "ArrowDown" || event.key === "ArrowUp")) {
      event.preventDefault();
      setActive(activeRow + (event.key === "ArrowDown" ? 1 : -1), true);
      return;
    }
    if (event.key.length === 1 && chooseInRow(event.key.toLowerCase())) event.preventDefault();
  });

  // ---------------------------------------------------------------- start
  var local = null;
  try { local = JSON.parse(window.localStorage.getItem(storageKey) || "null"); } catch (e) { local = null; }
  var server = config.draft && config.draft.v ? config.draft : null;
  var draft = local && (!server || (local.saved_at || 0) >= (server.saved_at || 0)) ? local : server;
  if (!config.preview && restore(draft)) say("Your unfinished answers were restored.");
  updateRanks();
  renderEsa();
  if (rows.length) setActive(0, false);
  if (protocol === "esa" && esaText) esaText.focus({preventScroll: true});

  var last = Date.now();
  window.setInterval(function () {
    var now = Date.now();
    if (document.visibilityState === "visible") elapsed += now - last;
    last = now;
    if (timerNode) timerNode.textContent = formatTime(elapsed);
  }, 1000);
  window.setInterval(function () {
    if (config.preview || submitting) return;
    try { window.localStorage.setItem(storageKey, JSON.stringify(snapshot())); } catch (e) { /* ignore */ }
  }, 5000);
  document.body.dataset.unitReady = "1";
})();
