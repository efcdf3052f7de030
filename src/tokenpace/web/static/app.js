// tokenpace: progressive enhancement only. Every page works without this file (charts are SVG drawn by the
// server); it submits the filter form as soon as a menu changes, and puts the page's origin in badge snippets.
(function () {
  "use strict";
  document.documentElement.classList.add("js");  // style.css hides the filter form's button: menus submit it
  document.querySelectorAll("form.filters select").forEach(function (select) {
    select.addEventListener("change", function () { select.form.submit(); });
  });
  // Badge snippets name this server's paths; pasted elsewhere they need its address, which only the page knows.
  document.querySelectorAll("code.embed").forEach(function (code) {
    code.textContent = code.textContent.replace(/([("])\/(badge|endpoint)\//g, "$1" + location.origin + "/$2/");
  });
})();
