// Baton admin: refreshes the dashboard's live section every few seconds.
// Everything else works without script.
(function () {
  "use strict";
  var live = document.getElementById("live");
  if (!live || !window.fetch) return;
  var every = parseInt(live.getAttribute("data-every"), 10) || 5000;
  var src = live.getAttribute("data-src");
  var busy = false;
  function refresh() {
    if (busy || document.hidden) return;
    busy = true;
    fetch(src, { credentials: "same-origin", cache: "no-store" })
      .then(function (r) {
        if (r.status === 401) { window.location.reload(); return null; }
        return r.ok ? r.text() : null;
      })
      .then(function (html) {
        if (html !== null && html !== undefined) {
          live.innerHTML = html;
          live.setAttribute("data-refreshed", String(Date.now()));
        }
      })
      .catch(function () {})
      .then(function () { busy = false; });
  }
  setInterval(refresh, every);
  document.addEventListener("visibilitychange", refresh);
})();
