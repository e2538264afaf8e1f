// The shared machinery of the protocol pages and of the set-up preview: the timer, autosave (in
// this browser at once, on the server a moment later), keyboard dispatch, the submission of the
// whole unit and its errors. What is specific to one protocol lives in static/js/protocols/<name>.js,
// loaded after this file, which calls
//
//   window.Annotate.register("<name>", {
//     init(unit),              // once, before the draft is restored: wire the protocol's controls
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
(function () {
  "use strict";
  var registered = {};
  var started = false;
  var configNode = document.getElementById("unit-config");
  var form = document.getElementById("unit-form");
  var config = configNode && form ? JSON.parse(configNode.textContent) : null;

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

  var statusNode = document.getElementById("unit-status");
  var errorsNode = document.getElementById("unit-errors");
  var timerNode = document.getElementById("unit-timer");
  // A reopened unit (config.revising) keeps its half-done changes under its own key: its stored
  // answers come as config.draft, and nothing is autosaved to the server until it is sent again.
  var storageKey = (config.revising ? "workbench-revise-" : "workbench-draft-") + config.assignment;
  var rows = Array.prototype.slice.call(form.querySelectorAll("[data-row]"));
  var activeRow = 0;
  var elapsed = 0;
  var submitting = false;
  var protocol = null;

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

  // ---------------------------------------------------------------- drafts
  function snapshot() {
    var fields = {}, touched = [];
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
    var result = protocol.collect(unit);
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
  // After a submit: the next unit is handed out by a POST (`next_method`), anything else is a page to open.
  function go(data) {
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
  form.addEventListener("submit", function (event) { event.preventDefault(); submit(); });
  form.addEventListener("change", changed);
  form.addEventListener("input", function (event) { if (event.target.type === "number") changed(); });

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

  // What a protocol's module sees.
  var unit = {
    config: config, form: form, root: document.getElementById("unit"),
    say: say, showErrors: showErrors, changed: changed, valueOf: valueOf, scores: scores,
    rowKeys: rowKeys
  };

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
  }
})();
