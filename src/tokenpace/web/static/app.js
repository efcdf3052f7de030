// tokenpace: progressive enhancement only. Every page works without this file (charts are SVG drawn by the
// server); it submits the filter form as soon as a menu changes.
(function () {
  "use strict";
  document.documentElement.classList.add("js");  // style.css hides the filter form's button: menus submit it
  document.querySelectorAll("form.filters select").forEach(function (select) {
    select.addEventListener("change", function () { select.form.submit(); });
  });
})();
