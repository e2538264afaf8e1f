// The shared machinery of the protocol pages and of the set-up preview: the timer, autosave (in
// this browser at once, on the server a moment later), keyboard dispatch, the submission of the
// whole unit and its errors. What is specific to one protocol lives in static/js/protocols/<name>.js,
// loaded after this file, which calls
//
//   window.Annotate.register("<name>", {
//     init(unit),              // once a unit, before the draft is restored: wire the protocol's controls
//     collect(unit),           // -> {judgements: [...], missing: ["what is still to answer", ...]}
//     check(result, unit),     // optional: false stops the submission (after saying why)
//     keydown(event, unit),    // optional: true if it handled the key (default: unit.rowKeys)
//     changed(unit),           // optional: after any answer changed
//     snapshot(draft),         // optional: add the protocol's own state to the draft
//     restore(draft, unit),    // optional: read that state back
//     ready(unit)              // optional: after the draft is restored
//   });
//
// `unit` holds the form, the config (the JSON of #unit-config) and the shared helpers below.
// The server renders every text; data is read with textContent / JSON and written with
// textContent: never innerHTML.
//
// The work page loads once. After a submit the server answers with the next unit as data (`unit`,
// annotations.views.annotate.unit_json); `draw` makes it from a copy of the first unit's node as
// the server rendered it (the template: the same campaign, protocol and controls, other texts and
// output ids), puts it in place of the unit just sent and starts it like the first. A unit of
// another shape (another number of outputs, an anchor or AI suggestions where the first had none)
// loads the page instead.
(function () {
  "use strict";
  var registered = {};
  var started = false;
  var firstUnit = document.getElementById("unit");
  var configNode = document.getElementById("unit-config");
  var form = document.getElementById("unit-form");
  var config = configNode && form ? JSON.parse(configNode.textContent) : null;
  // Copied before any script touched it: the form every next unit of the same shape is drawn from.
  var template = config && !config.preview && !config.revising ? firstUnit.cloneNode(true) : null;
  var templateShape = config ? config.shape : null;

  window.Annotate = {
    register: function (name, protocol) {
      registered[name] = protocol;
      // Deferred scripts run in document order, after parsing: the protocol's script comes
      // after this one, so the page is complete when its protocol registers.
      if (config && !started && name === config.protocol) { started = true; start(protocol); }
    }
  };
  if (!config) return;
  window.addEventListener("load", function () {
    if (!started) showErrors(["The script of this page (" + config.protocol + ") did not load: reload the page."]);
  });

  var statusNode, errorsNode, storageKey, rows, activeRow, elapsed, submitting, protocol, unit;
  var timerNode = document.getElementById("unit-timer");
  var timersStarted = false;
  // The unit in `root` becomes the one the page works on: its nodes, its config, a fresh state.
  function mount(root, unitConfig) {
    config = unitConfig;
    form = root.querySelector("#unit-form");
    statusNode = root.querySelector("#unit-status");
    errorsNode = root.querySelector("#unit-errors");
    // A reopened unit (config.revising) keeps its half-done changes under its own key: its stored
    // answers come as config.draft, and nothing is autosaved to the server until it is sent again.
    storageKey = (config.revising ? "workbench-revise-" : "workbench-draft-") + config.assignment;
    rows = Array.prototype.slice.call(form.querySelectorAll("[data-row]"));
    activeRow = 0;
    elapsed = 0;
    submitting = false;
    protocol = null;
    window.clearTimeout(serverTimer);
    wire(root);
  }

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
  // The default keys of a page of question rows ([data-row]): up / down between rows, and a
  // choice's key (data-key) picks it in the current row, then moves to the next one.
  function rowKeys(event) {
    var target = event.target;
    var onSlider = target && target.tagName === "INPUT" && target.type === "range";
    if (!onSlider && (event.key === "ArrowDown" || event.key === "ArrowUp")) {
      setActive(activeRow + (event.key === "ArrowDown" ? 1 : -1), true);
      return true;
    }
    return event.key.length === 1 && chooseInRow(event.key.toLowerCase());
  }

  // ---------------------------------------------------------------- sliders (annotate/_scale.html)
  function markTouched(slider) {
    slider.classList.remove("untouched");
    var box = slider.closest(".scale-slider") || slider.parentNode;
    var out = box.querySelector(".slider-value");
    if (out) out.textContent = slider.value;
  }
  // The listeners of one unit's nodes (they go with its nodes when the next unit replaces them).
  function wire(root) {
    rows.forEach(function (row, i) {
      row.addEventListener("focusin", function () { setActive(i, false); });
      row.addEventListener("click", function () { setActive(i, false); });
    });
    form.querySelectorAll("input[type=range]").forEach(function (slider) {
      ["input", "change"].forEach(function (type) {
        slider.addEventListener(type, function () { markTouched(slider); changed(); });
      });
      // The ends are answers too: an untouched slider rests at its minimum, so a click, a tap or
      // Home there changes no value and fires no input event; count the gesture itself.
      function touchedByGesture() {
        if (!slider.classList.contains("untouched")) return;
        markTouched(slider);
        changed();
      }
      slider.addEventListener("pointerup", touchedByGesture);
      slider.addEventListener("keyup", function (event) {
        if (/^(Home|End|PageUp|PageDown|Arrow(Left|Right|Up|Down))$/.test(event.key)) touchedByGesture();
      });
    });
    form.addEventListener("submit", function (event) { event.preventDefault(); submit(); });
    form.addEventListener("change", changed);
    form.addEventListener("input", function (event) { if (event.target.type === "number") changed(); });
    unit = {
      config: config, form: form, root: root,
      say: say, showErrors: showErrors, changed: changed, valueOf: valueOf, scores: scores,
      rowKeys: rowKeys
    };
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
  // The answers of the scales of annotate/_scale.html (s-<criterion>-<output>): one score per
  // output and criterion; `decorate(answer)` may add to each.
  function scores(decorate) {
    var judgements = [], missing = [];
    config.criteria.forEach(function (criterion) {
      config.outputs.forEach(function (output, position) {
        var raw = valueOf("s-" + criterion.index + "-" + output.id);
        var label = criterion.name + (config.outputs.length > 1 ? " (output " + (position + 1) + ")" : "");
        if (raw === null) { missing.push(label); return; }
        var score = Number(raw);
        if (!isFinite(score)) { missing.push(label); return; }
        var answer = {criterion: criterion.name, output: output.id, score: score};
        if (decorate) decorate(answer);
        judgements.push(answer);
      });
    });
    return {judgements: judgements, missing: missing};
  }

  // Special answers and the unit's free text (annotate/_extras.html): a criterion with a special
  // answer needs no judgement, so its answers and what is "still to answer" about it are dropped.
  function notes(result) {
    var special = {};
    form.querySelectorAll("select.special-select").forEach(function (select) {
      if (select.value) special[select.getAttribute("data-criterion")] = select.value;
    });
    var names = Object.keys(special);
    if (names.length) {
      var all = names.length === config.criteria.length;
      result.judgements = result.judgements.filter(function (j) { return !special[j.criterion]; });
      result.missing = all ? [] : result.missing.filter(function (m) {
        return !names.some(function (n) { return m === n || m.indexOf(n + " ") === 0 || m.indexOf(n + ":") === 0; });
      });
      names.forEach(function (n) { result.judgements.push({criterion: n, special: special[n]}); });
    }
    var comment = form.querySelector("#unit-text");
    if (comment && comment.value.trim()) result.judgements.push({comment: comment.value});
    return result;
  }

  // ---------------------------------------------------------------- drafts
  function snapshot() {
    var fields = {}, touched = [];
    form.querySelectorAll("select.special-select, #unit-text").forEach(function (input) {
      if (input.value !== "") fields[input.name] = input.value;
    });
    form.querySelectorAll("input[name]").forEach(function (input) {
      if (input.type === "radio") { if (input.checked) fields[input.name] = input.value; }
      else if (input.type === "range") { if (!input.classList.contains("untouched")) { fields[input.name] = input.value; touched.push(input.name); } }
      else if (input.value !== "") fields[input.name] = input.value;
    });
    var draft = {v: 1, fields: fields, touched: touched, elapsed_ms: elapsed, saved_at: Date.now()};
    if (protocol.snapshot) protocol.snapshot(draft);
    return draft;
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
    if (protocol.restore) protocol.restore(draft, unit);
    elapsed = Number(draft.elapsed_ms) || 0;
    return true;
  }
  var serverTimer = null;
  function changed() {
    if (!protocol) return;
    showErrors(null);
    if (protocol.changed) protocol.changed(unit);
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
    if (submitting || !protocol) return;
    var result = notes(protocol.collect(unit));
    if (result.missing.length) {
      showErrors(["Still to answer: " + result.missing.join(", ") + "."]);
      var firstEmpty = rows.findIndex(function (row) {
        return !row.querySelector("input:checked") && !row.querySelector("input[type=range]:not(.untouched)") &&
          !Array.prototype.some.call(row.querySelectorAll("input[type=number]"), function (i) { return i.value !== ""; });
      });
      if (firstEmpty >= 0) setActive(firstEmpty, true);
      return;
    }
    if (protocol.check && protocol.check(result, unit) === false) return;
    var body = {judgements: result.judgements, shown_order: config.shown_order, time_spent_ms: Math.round(elapsed)};
    // The unit's audio player (static/js/media_player.js), when it has one: the seconds listened.
    if (window.WorkbenchMedia) body.listened_ms = window.WorkbenchMedia.listenedMs();
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
          go(data);
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
  // After a submit: the next unit drawn here when it came with the answer (and has the first's
  // shape); else the next unit is handed out by a POST (`next_method`), anything else is a page to open.
  function go(data) {
    if (data.unit && template && data.unit.config && data.unit.config.shape === templateShape) {
      draw(data.unit);
      return;
    }
    if (!data.next) { window.location.reload(); return; }
    if (String(data.next_method || "GET").toUpperCase() !== "POST") { window.location.assign(data.next); return; }
    var next = document.createElement("form");
    next.method = "post";
    next.action = data.next;
    var token = document.createElement("input");
    token.type = "hidden";
    token.name = "csrfmiddlewaretoken";
    token.value = csrfToken();
    next.appendChild(token);
    document.body.appendChild(next);
    next.submit();
  }
  document.addEventListener("keydown", function (event) {
    if (!protocol || event.altKey || event.ctrlKey || event.metaKey) return;
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
    if ((protocol.keydown || rowKeys)(event, unit)) event.preventDefault();
  });

  mount(firstUnit, config);

  // ---------------------------------------------------------------- start
  function start(registeredProtocol) {
    protocol = registeredProtocol;
    if (protocol.init) protocol.init(unit);
    var local = null;
    try { local = JSON.parse(window.localStorage.getItem(storageKey) || "null"); } catch (e) { local = null; }
    var server = config.draft && config.draft.v ? config.draft : null;
    var draft = local && (!server || (local.saved_at || 0) >= (server.saved_at || 0)) ? local : server;
    if (!config.preview && restore(draft)) {
      say(config.revising ? "Your answers to this unit are shown: change them and press Save changes."
        : "Your unfinished answers were restored.");
    }
    if (rows.length) setActive(0, false);
    if (protocol.ready) protocol.ready(unit);
    // The keyboard works at once: the first control has the focus on arrival (a protocol's `ready`
    // may have focused its own, e.g. ESA's text), without scrolling past the instructions.
    if (!config.preview && (!document.activeElement || document.activeElement === document.body)) {
      var first = rows.length ? (rows[0].querySelector("input[type=range]") || rows[0].querySelector("input:checked") ||
        rows[0].querySelector("input")) : form.querySelector("input, select, textarea, [tabindex='0']");
      if (first) first.focus({preventScroll: true});
    }

    document.body.dataset.unitReady = "1";
    if (timersStarted) return;
    timersStarted = true;
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
  }

  // ---------------------------------------------------------------- the next unit, drawn here
  function node(tag, attrs, text) {
    var el = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (name) { el.setAttribute(name, attrs[name]); });
    if (text !== undefined && text !== null) el.textContent = text;
    return el;
  }
  // The input panel (annotate/_input.html): the source, the data (triples or as the server printed
  // it), the references; none when the unit shows none of them.
  function drawInput(root, input) {
    var old = root.querySelector("section.task-input");
    var refs = input.references || [], triples = input.triples || [];
    if (!input.source && !triples.length && !input.other && !refs.length) { if (old) old.remove(); return; }
    var section = node("section", {"class": "panel task-input", "aria-label": "Input"});
    if (input.source) section.appendChild(node("div", {"class": "text-block source-text", dir: "auto"}, input.source));
    if (triples.length) {
      var table = node("table", {"class": "table triples"});
      table.appendChild(node("caption", {"class": "sr-only"}, "Input data"));
      var body = node("tbody");
      triples.forEach(function (t) {
        var tr = node("tr");
        tr.appendChild(node("td", {}, t[0]));
        tr.appendChild(node("td", {"class": "predicate"}, t[1]));
        tr.appendChild(node("td", {}, t[2]));
        body.appendChild(tr);
      });
      table.appendChild(body);
      section.appendChild(table);
    } else if (input.other) {
      section.appendChild(node("pre", {"class": "text-block"}, input.other));
    }
    if (refs.length) {
      var box = node("div", {"class": "task-refs"});
      box.appendChild(node("h2", {"class": "small-heading"}, refs.length === 1 ? "Reference" : "References"));
      var list = node("ol", {"class": "references"});
      refs.forEach(function (text) { list.appendChild(node("li", {"class": "text-block", dir: "auto"}, text)); });
      box.appendChild(list);
      section.appendChild(box);
    }
    if (old) { old.replaceWith(section); return; }
    var instructions = root.querySelector("details.instructions");
    if (instructions) instructions.after(section); else root.prepend(section);
  }
  // The document context (annotate/_context.html): the segments before the judged one above the
  // input, those after it below the form; none when the unit shows no context.
  function drawContext(root, context) {
    ["before", "after"].forEach(function (side) {
      var old = root.querySelector("section.doc-context-" + side);
      var segments = (context && context[side]) || [];
      if (!segments.length) { if (old) old.remove(); return; }
      var section = node("section", {"class": "panel doc-context doc-context-" + side,
        "aria-labelledby": "doc-context-" + side + "-title"});
      var title = node("h2", {"class": "small-heading", id: "doc-context-" + side + "-title"},
        side === "before" ? "Earlier in the document " : "Later in the document ");
      title.appendChild(node("span", {"class": "context-note"}, "(context, not judged)"));
      section.appendChild(title);
      var list = node("ol", {"class": "context-segments"});
      segments.forEach(function (segment) {
        var li = node("li", {"class": "context-segment"});
        if (segment.source) li.appendChild(node("div", {"class": "text-block context-source", dir: "auto"}, segment.source));
        var labelled = function (cls, label, text) {
          var row = node("div", {"class": "text-block " + cls});
          row.appendChild(node("span", {"class": "context-label"}, label + ":"));
          row.appendChild(document.createTextNode(" "));
          row.appendChild(node("span", {dir: "auto"}, text));
          li.appendChild(row);
        };
        (segment.references || []).forEach(function (text) { labelled("context-reference", "Reference", text); });
        (segment.outputs || []).forEach(function (o) { labelled("context-output", o.label, o.text); });
        list.appendChild(li);
      });
      section.appendChild(list);
      if (old) { old.replaceWith(section); return; }
      if (side === "before") {
        var anchor = root.querySelector("section.task-input") || root.querySelector("#unit-form");
        anchor.before(section);
      } else {
        root.querySelector("#unit-form").after(section);
      }
    });
  }
  // The outputs: each card's text, and the card's output id (a handle of this unit) wherever the
  // template's unit had its own (the card, input names and values, rank badges).
  function drawOutputs(root, outputs) {
    var cards = root.querySelectorAll("[data-output]");
    var renames = [];
    cards.forEach(function (card, i) {
      var output = outputs[i];
      renames.push([card.getAttribute("data-output"), String(output.id)]);
      var text = card.querySelector(".output-text");
      if (text) text.textContent = output.text;
      var count = card.querySelector("[data-suggestion-count]");
      if (count) count.textContent = String(output.suggestions);
    });
    root.querySelectorAll("*").forEach(function (el) {
      Array.prototype.forEach.call(el.attributes, function (attr) {
        var value = attr.value;
        renames.forEach(function (pair) { if (value.indexOf(pair[0]) >= 0) value = value.split(pair[0]).join(pair[1]); });
        if (value !== attr.value) el.setAttribute(attr.name, value);
      });
    });
  }
  // Around the unit: the batch's progress, the campaign's (researchers only), the strip of the
  // batch's units (annotate/_batch_strip.html) and the skip button's target.
  function drawPage(data) {
    var p = data.progress;
    var line = document.getElementById("batch-progress");
    if (line) {
      line.textContent = "Your batch" + (p.batch > 1 ? " " + p.batch : "") + ": ";
      line.appendChild(node("strong", {}, p.batch_done + " / " + p.batch_size));
      line.appendChild(document.createTextNode(" done"));
    }
    var bar = document.getElementById("batch-progress-bar");
    if (bar) { bar.max = p.batch_size; bar.value = p.batch_done; bar.textContent = p.batch_done + " / " + p.batch_size; }
    var overall = document.getElementById("overall-percent");
    if (overall && data.overall !== null && data.overall !== undefined) overall.textContent = String(data.overall);
    var strip = document.getElementById("batch-strip");
    if (strip) drawStrip(strip, data.batch);
    var skip = document.getElementById("skip-form");
    if (skip && config.release_url) skip.action = config.release_url;
  }
  function drawStrip(holder, batch) {
    holder.textContent = "";
    var slots = batch.slots || [];
    if (!slots.length) return;
    var nav = node("nav", {"class": "batch-strip", "aria-label": "Units of your batch"});
    var list = node("ol");
    slots.forEach(function (s) {
      if (s.state === "todo") return;
      var li = node("li"), mark;
      if (s.current) {
        mark = node("span", {"class": "batch-unit current" + (s.state === "done" ? " done" : ""), "aria-current": "step",
          title: "Unit " + s.position + ": open now"}, String(s.position));
      } else if (s.url && s.state === "done") {
        mark = node("a", {"class": "batch-unit done", href: s.url, title: "Reopen unit " + s.position,
          "aria-label": "Unit " + s.position + ", submitted: reopen to change your answers"}, String(s.position));
      } else if (s.url) {
        mark = node("a", {"class": "batch-unit pending", href: s.url,
          "aria-label": "Unit " + s.position + ", in progress: go back to it"}, String(s.position));
      } else {
        mark = node("span", {"class": "batch-unit done"}, String(s.position));
      }
      li.appendChild(mark);
      list.appendChild(li);
    });
    nav.appendChild(list);
    var last = slots[slots.length - 1];
    nav.appendChild(node("span", {"class": "batch-of muted small"}, (last.state === "todo" ? "… " : "") + "of " + batch.size));
    holder.appendChild(nav);
  }
  function draw(data) {
    var next = template.cloneNode(true);
    var current = document.getElementById("unit");
    // The instructions stay as the annotator left them (open or folded).
    var wasOpen = current.querySelector("details.instructions"), willOpen = next.querySelector("details.instructions");
    if (wasOpen && willOpen) willOpen.open = wasOpen.open;
    drawInput(next, data.input);
    drawContext(next, data.context);
    drawOutputs(next, data.outputs);
    if (data.anchor) {
      next.querySelectorAll("[data-anchor-text]").forEach(function (el) { el.textContent = data.anchor.text; });
      next.querySelectorAll("[data-anchor-value]").forEach(function (el) { el.textContent = data.anchor.value; });
    }
    next.querySelector("#unit-config").textContent = JSON.stringify(data.config);
    document.body.dataset.unitReady = "";
    current.replaceWith(next);
    mount(next, data.config);
    drawPage(data);
    window.scrollTo(0, 0);
    start(registered[config.protocol]);
    say("Your answers were saved. This is the next unit.");
    document.body.dataset.assignment = String(config.assignment);
  }
})();
