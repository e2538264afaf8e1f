// Crowd studies: MTurk's completion form is sent as soon as the page loads (no inline script: the CSP).
(function () {
  "use strict";
  var form = document.querySelector("form[data-autosubmit]");
  if (form) form.submit();
})();
