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
  if (dataset) dataset.addEventListener("change", filterSystems);
  var protocol = document.getElementById("id_protocol");
  if (protocol) protocol.addEventListener("change", protocolFields);
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
