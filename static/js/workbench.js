// Small enhancements only; every page works without JavaScript.
// Item pages: the left and right arrow keys follow the previous / next links.
document.addEventListener("keydown", function (event) {
  if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return;
  var target = event.target;
  if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) return;
  var link = document.querySelector('a[data-key="' + event.key + '"]');
  if (link) window.location.href = link.href;
});
