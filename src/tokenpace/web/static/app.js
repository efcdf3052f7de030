// tokenpace: progressive enhancement only. Every page works without this file; it draws the charts whose
// figures the server embedded as JSON, and submits the filter form as soon as a menu changes.
(function () {
  "use strict";
  document.documentElement.classList.add("js");

  document.querySelectorAll("form.filters select").forEach(function (select) {
    select.addEventListener("change", function () { select.form.submit(); });
  });

  var source = document.getElementById("chart-data");
  if (!source || typeof Plotly === "undefined") return;
  var figures = JSON.parse(source.textContent);
  var config = { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["lasso2d", "select2d"] };
  Object.keys(figures).forEach(function (id) {
    var target = document.getElementById(id);
    if (!target) return;
    target.textContent = "";  // drop the no-JS note
    var fig = figures[id];
    Plotly.newPlot(target, fig.data, fig.layout, config);
  });
})();
