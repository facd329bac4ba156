// arkai site (optional; everything works without it): a claim whose span crosses another
// is split into pieces and only the first piece carries the id that CSS :target
// highlights, so this also lights up the other pieces. Clicking a line number links to it,
// and a link to a collapsed section opens it.
(function () {
  function light() {
    var on = document.querySelectorAll("mark.ak-on");
    for (var i = 0; i < on.length; i++) on[i].classList.remove("ak-on");
    var id = decodeURIComponent(location.hash.slice(1));
    // A link to a collapsed section (search results, #key-points) opens it.
    var target = id && document.getElementById(id);
    var box = target && target.closest ? target.closest("details") : null;
    if (box && !box.open) { box.open = true; target.scrollIntoView(); }
    if (!/^E[A-Za-z0-9_-]+$/.test(id)) return;
    var parts = document.querySelectorAll('mark[data-e="' + id + '"]');
    for (var j = 0; j < parts.length; j++) parts[j].classList.add("ak-on");
  }
  document.addEventListener("click", function (ev) {
    var line = ev.target;
    if (line && line.matches && line.matches('.ak-t div[id^="L"]') && ev.offsetX < 56) {
      location.hash = line.id;
    }
  });
  window.addEventListener("hashchange", light);
  if (window.document$ && window.document$.subscribe) window.document$.subscribe(light);
  else light();
})();
