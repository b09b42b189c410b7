// Keyboard-first review: accept / reject / reason numbers / previous / next / undo,
// comparison modes (side by side, flicker, slider), target-box toggle, preloading of the
// next item's images, and the admin dashboard's live refresh. No inline scripts (CSP).
(function () {
  "use strict";
  var body = document.body;
  var item = document.getElementById("item");
  var compare = document.getElementById("compare");
  var flickerTimer = null;

  function typing(el) {
    if (!el) return false;
    var tag = el.tagName;
    return tag === "TEXTAREA" || tag === "SELECT" || (tag === "INPUT" && el.type !== "checkbox" && el.type !== "range" && el.type !== "radio");
  }

  function hint(text) {
    var el = document.getElementById("key-hint");
    if (el) el.textContent = text;
  }

  function setMode(mode) {
    if (!compare) return;
    compare.classList.remove("mode-side", "mode-flicker", "mode-slider");
    compare.classList.add("mode-" + mode);
    if (flickerTimer) { clearInterval(flickerTimer); flickerTimer = null; }
    var clip = document.getElementById("clip");
    var label = document.getElementById("stack-label");
    if (mode === "flicker" && clip) {
      var on = true;
      clip.style.width = "100%";
      if (label) label.textContent = "flicker: edited";
      flickerTimer = setInterval(function () {
        on = !on;
        clip.style.width = on ? "100%" : "0%";
        if (label) label.textContent = on ? "flicker: edited" : "flicker: original";
      }, 600);
    } else if (mode === "slider" && clip) {
      var slider = document.getElementById("slider");
      clip.style.width = (slider ? slider.value : 50) + "%";
      if (label) label.textContent = "left: edited · right: original";
    }
  }

  function submit(verdict) {
    var btn = document.getElementById(verdict === "accept" ? "btn-accept" : "btn-reject");
    var form = document.getElementById("decide-form");
    if (!btn || !form) return;
    if (verdict === "reject") {
      var any = document.querySelectorAll('input[name="reason"]:checked').length > 0;
      if (!any) { hint("Pick at least one reason (1-6) before rejecting."); return; }
    }
    form.requestSubmit(btn);
  }

  function click(id) {
    var el = document.getElementById(id);
    if (el) el.click();
  }

  if (item) {
    // Preload the next item's images so the next page shows at once.
    (item.getAttribute("data-preload") || "").split(" ").forEach(function (url) {
      if (url) { var img = new Image(); img.src = url; }
    });
    var slider = document.getElementById("slider");
    if (slider) slider.addEventListener("input", function () {
      var clip = document.getElementById("clip");
      if (clip) clip.style.width = slider.value + "%";
    });
    document.querySelectorAll(".q-invalid").forEach(function (box) {
      box.addEventListener("change", function () { box.closest("fieldset").classList.toggle("invalid", box.checked); });
    });
  }

  document.addEventListener("keydown", function (ev) {
    if (!item) return;
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); submit("accept"); return; }
    if (typing(ev.target)) {
      if (ev.key === "Escape") ev.target.blur();
      return;
    }
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    var key = ev.key;
    if (key >= "1" && key <= "9") {
      var box = document.querySelector('input[name="reason"][data-key="' + key + '"]');
      if (box) { box.checked = !box.checked; if (box.value === "other" && box.checked) { var note = document.getElementById("note"); if (note) note.focus(); ev.preventDefault(); } }
      return;
    }
    switch (key.toLowerCase()) {
      case "a": ev.preventDefault(); submit("accept"); break;
      case "r": case "x": ev.preventDefault(); submit("reject"); break;
      case "b": item.classList.toggle("show-box"); break;
      case "f": setMode("flicker"); break;
      case "s": setMode("slider"); break;
      case "c": setMode("side"); break;
      case "u": ev.preventDefault(); click("undo"); break;
      case "arrowleft": case "p": click("prev"); break;
      case "arrowright": case "n": click("next"); break;
      case "?": hint("A accept · R reject · 1-6 reasons · B box · C/F/S compare · ← previous · → next · U undo · Ctrl+Enter accept"); break;
    }
  });

  // Admin dashboard: refresh the numbers every few seconds.
  var stats = document.getElementById("stats");
  if (stats && stats.getAttribute("data-refresh")) {
    setInterval(function () {
      fetch(stats.getAttribute("data-refresh"), { credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) { if (html !== null) stats.innerHTML = html; })
        .catch(function () {});
    }, 2000);
  }
})();
