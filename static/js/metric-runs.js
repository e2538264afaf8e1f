// The dataset page's "Metric runs" panel: a form that starts a run through the
// API, and a list of runs whose progress is polled until they end.
(function () {
  "use strict";
  var panel = document.getElementById("metric-runs");
  if (!panel) return;
  var runsUrl = panel.getAttribute("data-runs-url");
  var data = JSON.parse(document.getElementById("metric-form-data").textContent);
  var form = document.getElementById("metric-run-form");
  var select = document.getElementById("metric-select");
  var optionsBox = document.getElementById("metric-options");
  var errorBox = document.getElementById("metric-run-error");
  var body = document.getElementById("metric-runs-body");
  var csrf = form.querySelector('input[name="csrfmiddlewaretoken"]').value;
  var timer = null;
  var OTHER = "\u0000other";

  Object.keys(data.metrics).forEach(function (name) {
    var opt = document.createElement("option");
    opt.value = name;
    opt.textContent = name + (data.metrics[name].uses_model ? " (model)" : "");
    if (name === data["default"]) opt.selected = true;
    select.appendChild(opt);
  });

  // One input per option, typed by its default; the model option offers the configured models.
  function renderOptions() {
    optionsBox.textContent = "";
    var options = data.metrics[select.value].options;
    Object.keys(options).forEach(function (key) {
      var value = options[key];
      var label = document.createElement("label");
      label.className = "field";
      var span = document.createElement("span");
      span.textContent = key;
      label.appendChild(span);
      var input;
      var suited = (data.models_by_metric || {})[select.value];
      if (key === "model" && suited) {
        // The local models that suit this metric (a judge: causal LMs only), or a typed path.
        input = modelPicker(suited, value);
      } else if (key === "model" && (value === null || data.models.indexOf(value) >= 0)) {
        input = document.createElement("select");
        data.models.forEach(function (m) {
          var o = document.createElement("option");
          o.value = m;
          o.textContent = m;
          input.appendChild(o);
        });
        var other = document.createElement("option");
        other.value = "";
        other.textContent = "(metric default)";
        if (value !== null) input.appendChild(other);
        input.value = value === null ? data.models[0] : value;
      } else if (typeof value === "boolean") {
        input = document.createElement("input");
        input.type = "checkbox";
        input.checked = value;
        label.className = "field field-inline";
      } else {
        input = document.createElement("input");
        input.type = "text";
        input.value = value === null ? "" : (typeof value === "object" ? JSON.stringify(value) : String(value));
        input.placeholder = value === null ? "none" : "";
      }
      input.name = "opt-" + key;
      input.setAttribute("data-option", key);
      label.appendChild(input);
      (input.extras || []).forEach(function (node) { label.appendChild(node); });
      optionsBox.appendChild(label);
    });
  }

  // A select of the suitable models plus "another directory…", which shows a text field for a
  // directory name or path inside the model directories. Returns the select; the option's value
  // is read from the field while "another" is chosen (see optionValue).
  function modelPicker(suited, value) {
    var picker = document.createElement("select");
    suited.forEach(function (m) {
      var o = document.createElement("option");
      o.value = m.name;
      o.textContent = m.architecture ? m.name + " (" + m.architecture + ")" : m.name;
      picker.appendChild(o);
    });
    var another = document.createElement("option");
    another.value = OTHER;
    another.textContent = "another directory…";
    picker.appendChild(another);
    var typed = document.createElement("input");
    typed.type = "text";
    typed.setAttribute("data-option-typed", "");
    typed.setAttribute("aria-label", "model directory (inside the model directories)");
    typed.placeholder = "e.g. tiny-judge or var/models/tiny-judge";
    var hint = document.createElement("span");
    hint.className = "small muted";
    hint.setAttribute("data-field", "model-hint");
    if (!suited.length) {
      hint.textContent = "No suitable model found in the model directories (WORKBENCH_MODEL_DIRS): type one.";
    }
    picker.value = suited.length ? (value !== null && suited.some(function (m) { return m.name === value; })
      ? value : suited[0].name) : OTHER;
    function sync() { typed.hidden = picker.value !== OTHER; }
    picker.addEventListener("change", sync);
    sync();
    picker.extras = [typed, hint];  // placed after the select by renderOptions
    return picker;
  }

  function optionValue(input) {
    if (input.tagName === "SELECT" && input.value === OTHER) {
      var typed = input.parentNode.querySelector("[data-option-typed]");
      return typed ? typed.value : "";
    }
    return input.value;
  }

  // Only options changed from their defaults are sent (strings are typed by the server).
  function chosenOptions() {
    var defaults = data.metrics[select.value].options;
    var chosen = {};
    optionsBox.querySelectorAll("[data-option]").forEach(function (input) {
      var key = input.getAttribute("data-option");
      var def = defaults[key];
      if (input.type === "checkbox") {
        if (input.checked !== def) chosen[key] = input.checked;
        return;
      }
      var text = optionValue(input).trim();
      var defText = def === null ? "" : (typeof def === "object" ? JSON.stringify(def) : String(def));
      if (text !== defText) chosen[key] = text === "" ? null : text;
    });
    return chosen;
  }

  function fmt(value) {
    return typeof value === "number" ? value.toFixed(4) : "–";
  }

  // Each system's score as every page shows it (the metric's corpus score), under its label.
  function systemScores(sys) {
    var box = document.createElement("details");
    box.className = "system-scores small";
    box.setAttribute("data-field", "system-scores");
    var summary = document.createElement("summary");
    summary.textContent = "by system";
    box.appendChild(summary);
    var label = document.createElement("div");
    label.className = "muted";
    label.setAttribute("data-field", "system-scores-label");
    label.textContent = sys.label;
    box.appendChild(label);
    var table = document.createElement("table");
    Object.keys(sys.scores).forEach(function (name) {
      var tr = document.createElement("tr");
      tr.setAttribute("data-system", name);
      var th = document.createElement("th");
      th.textContent = name;
      var td = document.createElement("td");
      td.className = "num";
      td.textContent = fmt(sys.scores[name]);
      tr.appendChild(th);
      tr.appendChild(td);
      table.appendChild(tr);
    });
    box.appendChild(table);
    return box;
  }

  // Column names, repeated on each cell for the phone layout (one card per run, see the CSS).
  var LABELS = {id: "Run", metric: "Metric", status: "Status", progress: "Progress",
                score: "Score (all outputs)", "by-system": "By system"};

  function row(run) {
    var tr = document.createElement("tr");
    tr.setAttribute("data-run-id", run.id);
    tr.setAttribute("data-status", run.status);
    function cell(field, text, cls) {
      var td = document.createElement("td");
      if (field) td.setAttribute("data-field", field);
      if (LABELS[field]) td.setAttribute("data-label", LABELS[field]);
      if (cls) td.className = cls;
      td.textContent = text;  // text, never HTML
      tr.appendChild(td);
      return td;
    }
    cell("id", "#" + run.id);
    var m = cell("metric", run.metric);
    if (run.signature) m.title = run.signature;
    var st = cell("status", run.status);
    if (run.error) {
      var err = document.createElement("div");
      err.className = "field-error small";
      err.setAttribute("data-field", "error");
      err.textContent = run.error;
      st.appendChild(err);
    }
    if (run.waiting) {
      var wait = document.createElement("div");
      wait.className = "small muted";
      wait.setAttribute("data-field", "waiting");
      wait.textContent = run.waiting;
      st.appendChild(wait);
    }
    // Scored so far: stored chunks plus the batches of chunks still running (model metrics).
    var percent = typeof run.progress_percent === "number" ? run.progress_percent : run.percent;
    var scored = run.done + (run.scoring || 0);
    var prog = cell("progress", "");
    var bar = document.createElement("progress");
    bar.max = 100;
    bar.value = percent;
    bar.setAttribute("aria-label", "scored " + scored + " of " + run.total);
    prog.appendChild(bar);
    var pct = document.createElement("span");
    pct.className = "small muted";
    pct.setAttribute("data-field", "percent");
    pct.textContent = " " + scored + "/" + run.total + " (" + Math.round(percent) + "%)";
    if (run.scoring) pct.title = run.done + " stored, " + run.scoring + " being scored";
    prog.appendChild(pct);
    var score = cell("score", run.corpus ? fmt(run.corpus.score) : "", "num");
    var bySystem = cell("by-system", "");
    if (run.system_scores) {
      score.title = run.system_scores.aggregate + " over all outputs";
      bySystem.appendChild(systemScores(run.system_scores));
    }
    var actions = cell("", "");
    if (run.status === "queued" || run.status === "running") {
      var b = document.createElement("button");
      b.type = "button";
      b.className = "btn btn-small";
      b.textContent = "Cancel";
      b.addEventListener("click", function () { post("/api/metric-runs/" + run.id + "/cancel/", {}); });
      actions.appendChild(b);
    }
    return tr;
  }

  function show(runs) {
    body.textContent = "";
    if (!runs.length) {
      var tr = document.createElement("tr");
      var td = document.createElement("td");
      td.colSpan = 7;
      td.className = "muted";
      td.textContent = "No metric runs yet.";
      tr.appendChild(td);
      body.appendChild(tr);
    }
    runs.forEach(function (run) { body.appendChild(row(run)); });
  }

  function refresh() {
    clearTimeout(timer);
    fetch(runsUrl, {headers: {Accept: "application/json"}, credentials: "same-origin"})
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (page) {
        if (!page) return;
        show(page.results);
        var active = page.results.some(function (r) { return r.status === "queued" || r.status === "running"; });
        if (active) timer = setTimeout(refresh, 1000);
      })
      .catch(function () { timer = setTimeout(refresh, 3000); });
  }

  function post(url, payload) {
    return fetch(url, {
      method: "POST", credentials: "same-origin",
      headers: {"Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrf},
      body: JSON.stringify(payload)
    }).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (json) {
        if (!r.ok) {
          var msg = json.detail || Object.keys(json).map(function (k) { return k + ": " + json[k]; }).join("; ");
          errorBox.textContent = msg || ("Error " + r.status);
          errorBox.hidden = false;
        } else {
          errorBox.hidden = true;
        }
        refresh();
        return json;
      });
    });
  }

  select.addEventListener("change", renderOptions);
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    post(runsUrl, {metric: select.value, options: chosenOptions(), rerun: form.elements.rerun.checked});
  });
  renderOptions();
  refresh();
})();
