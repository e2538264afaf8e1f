// Crowd studies (no inline script: the CSP).
// - MTurk's completion form is sent as soon as the page loads.
// - Other platforms: the done page follows its completion link at once. A navigation started by the
//   page is no form submission, so CSP `form-action 'self'` (which stops a POST's redirect chain at
//   the site's edge) does not apply; replace() keeps the done page out of the history.
(function () {
  "use strict";
  var form = document.querySelector("form[data-autosubmit]");
  if (form) form.submit();
  var link = document.querySelector("a[data-autofollow]");
  if (link) window.location.replace(link.href);
})();
