// Small enhancements only; every page works without JavaScript.

// A table that scrolls sideways (a narrow screen) must be reachable by the keyboard to be scrolled:
// it gets a tab stop while it overflows, and loses it when it fits again.
(function () {
  function tabStops() {
    document.querySelectorAll(".table, .table-wrap").forEach(function (box) {
      var scrolls = box.scrollWidth > box.clientWidth + 1 && /^(auto|scroll)$/.test(getComputedStyle(box).overflowX);
      if (scrolls && !box.hasAttribute("tabindex")) {
        box.setAttribute("tabindex", "0");
        box.dataset.scrollStop = "1";
        if (box.tagName !== "TABLE" && !box.hasAttribute("role")) {
          box.setAttribute("role", "region");
          box.setAttribute("aria-label", "Table (scrolls sideways)");
        }
      } else if (!scrolls && box.dataset.scrollStop) {
        box.removeAttribute("tabindex");
        delete box.dataset.scrollStop;
        if (box.getAttribute("aria-label") === "Table (scrolls sideways)") {
          box.removeAttribute("role");
          box.removeAttribute("aria-label");
        }
      }
    });
  }
  window.addEventListener("load", tabStops);
  window.addEventListener("resize", tabStops);
})();

// Item pages: the left and right arrow keys follow the previous / next links.
document.addEventListener("keydown", function (event) {
  if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return;
  var target = event.target;
  if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) return;
  var link = document.querySelector('a[data-key="' + event.key + '"]');
  if (link) window.location.href = link.href;
});

// Members page: "Copy" puts a login link on the clipboard (the field stays selectable without JavaScript).
document.addEventListener("click", function (event) {
  var button = event.target.closest && event.target.closest("button[data-copy]");
  if (!button) return;
  var field = document.getElementById(button.getAttribute("data-copy"));
  if (!field) return;
  field.focus();
  field.select();
  var done = function () { button.textContent = "Copied"; };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(field.value).then(done, function () { document.execCommand("copy"); done(); });
  } else {
    document.execCommand("copy");
    done();
  }
});

// Pages that take long to compute (the analysis figures: ~20 s for a large campaign's
// meta-evaluation on its first load) say so while they load: a link or form marked `data-busy`
// shows its message with an indeterminate progress bar (role=status) as soon as it is followed,
// instead of the old page looking idle and then a blank one (issue 38).
(function () {
  function show(message) {
    var box = document.getElementById("page-busy");
    if (!box) {
      box = document.createElement("div");
      box.id = "page-busy";
      box.className = "page-busy";
      box.setAttribute("role", "status");
      var text = document.createElement("span");
      text.setAttribute("data-field", "busy-text");
      box.appendChild(text);
      var bar = document.createElement("progress");
      bar.setAttribute("aria-hidden", "true");
      box.appendChild(bar);
      document.body.appendChild(box);
    }
    box.querySelector('[data-field="busy-text"]').textContent = message;
    box.hidden = false;
    document.body.setAttribute("aria-busy", "true");
  }
  document.addEventListener("click", function (event) {
    var link = event.target.closest ? event.target.closest("a[data-busy]") : null;
    if (!link || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey ||
        event.shiftKey || event.altKey || link.target) return;
    if (link.getAttribute("href").indexOf("format=csv") >= 0) return;  // a download: the page stays
    show(link.getAttribute("data-busy"));
  });
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (event.defaultPrevented || !form.hasAttribute || !form.hasAttribute("data-busy")) return;
    show(form.getAttribute("data-busy"));
  });
  // Back and forward bring the page back as it was left: without the message.
  window.addEventListener("pageshow", function () {
    var box = document.getElementById("page-busy");
    if (box) box.hidden = true;
    document.body.removeAttribute("aria-busy");
  });
})();
