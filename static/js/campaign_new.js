// Campaign set-up page: show only the systems of the chosen dataset, and add criterion rows.
(function () {
  "use strict";
  var dataset = document.getElementById("id_dataset");
  function filterSystems() {
    if (!dataset) return;
    document.querySelectorAll("[data-for=systems] li[data-dataset]").forEach(function (li) {
      var mine = li.dataset.dataset === dataset.value;
      li.hidden = !mine;
      if (!mine) { var box = li.querySelector("input"); if (box) box.checked = false; }
    });
  }
  function protocolFields() {
    var protocol = document.getElementById("id_protocol");
    if (!protocol) return;
    // Each protocol's own fields, as the protocol classes declare them (annotations/protocols).
    var fields = JSON.parse(document.getElementById("protocol-fields").textContent);
    var mine = fields[protocol.value] || [];
    var every = {};
    Object.keys(fields).forEach(function (p) { fields[p].forEach(function (name) { every[name] = true; }); });
    Object.keys(every).forEach(function (name) {
      document.querySelectorAll('[data-for="' + name + '"]').forEach(function (node) {
        node.hidden = mine.indexOf(name) < 0;
      });
    });
  }
  // What the chosen protocol declares (annotations/protocols: default scale, each option's default,
  // bounds and help): the option fields are shared by name, so their hints follow the protocol.
  var hintsNode = document.getElementById("protocol-hints");
  var hints = hintsNode ? JSON.parse(hintsNode.textContent) : {};
  function scaleText(scale) { return scale ? [String(scale[0]), String(scale[1])] : ["", ""]; }
  function protocolHints(changed) {
    var protocol = document.getElementById("id_protocol");
    if (!protocol) return;
    var mine = hints[protocol.value] || {};
    Object.keys(mine.options || {}).forEach(function (name) {
      var hint = mine.options[name];
      var input = document.getElementById("id_" + name);
      if (input && input.tagName === "INPUT") {
        input.placeholder = hint.default === null || hint.default === undefined || typeof hint.default === "object"
          ? "" : "default " + hint.default;
        if (hint.min !== null && input.type === "number") input.min = hint.min; else input.removeAttribute("min");
        if (hint.max !== null && input.type === "number") input.max = hint.max; else input.removeAttribute("max");
      }
      document.querySelectorAll('[data-help-for="' + name + '"]').forEach(function (node) {
        node.textContent = hint.help;
      });
    });
    // A criterion keeps a scale the researcher typed; one still at the scale the page last put
    // there takes the new protocol's (ESA: 0-100), so what is created is what the help says.
    if (!changed || !mine.scale) return;
    var after = scaleText(mine.scale);
    document.querySelectorAll("#criteria-rows .criterion-row").forEach(function (row) {
      var low = row.querySelector('input[name$="-scale_min"]'), high = row.querySelector('input[name$="-scale_max"]');
      if (low && high && same(low, autoScale[0]) && same(high, autoScale[1])) {
        low.value = after[0];
        high.value = after[1];
      }
    });
    autoScale = after;
  }
  function same(input, value) {
    return value === "" ? input.value === "" : input.value !== "" && Number(input.value) === Number(value);
  }
  if (dataset) dataset.addEventListener("change", filterSystems);
  var protocol = document.getElementById("id_protocol");
  // The scale the page put in the criteria: the initially chosen protocol's.
  var autoScale = scaleText(protocol ? (hints[protocol.value] || {}).scale : null);
  if (protocol) protocol.addEventListener("change", function () {
    protocolFields();
    protocolHints(true);
  });
  protocolHints(false);
  filterSystems();
  protocolFields();

  var add = document.getElementById("add-criterion");
  var rows = document.getElementById("criteria-rows");
  var total = document.getElementById("id_criteria-TOTAL_FORMS");
  if (add && rows && total) {
    add.addEventListener("click", function () {
      var index = Number(total.value);
      if (index >= 20) return;
      var copy = rows.lastElementChild.cloneNode(true);
      copy.querySelectorAll(".field-error").forEach(function (node) { node.remove(); });
      copy.querySelectorAll("input, select").forEach(function (input) {
        input.name = input.name.replace(/criteria-\d+-/, "criteria-" + index + "-");
        input.id = input.id.replace(/criteria-\d+-/, "criteria-" + index + "-");
        if (input.tagName === "SELECT") input.selectedIndex = 0; else input.value = "";
      });
      rows.appendChild(copy);
      total.value = String(index + 1);
      var first = copy.querySelector("input");
      if (first) first.focus();
    });
  }
})();
