// Progressive enhancement only: every page works without this file.
(function () {
  "use strict";

  // Copy buttons next to digests and citations.
  function enableCopyButtons() {
    if (!navigator.clipboard) return;
    document.querySelectorAll("button.copy[data-copy]").forEach(function (button) {
      button.hidden = false;
      button.addEventListener("click", function () {
        navigator.clipboard.writeText(button.dataset.copy).then(function () {
          var label = button.textContent;
          button.textContent = "Copied";
          setTimeout(function () { button.textContent = label; }, 1500);
        });
      });
    });
  }

  // As-you-type suggestions for the search box.
  function enableSuggestions() {
    var input = document.querySelector("input[data-suggest]");
    if (!input || !window.fetch) return;
    var list = document.createElement("ul");
    list.className = "suggestions";
    list.id = "search-suggestions";
    list.setAttribute("role", "listbox");
    list.hidden = true;
    input.setAttribute("aria-controls", list.id);
    input.setAttribute("aria-autocomplete", "list");
    input.parentNode.appendChild(list);
    var pending = null;
    var active = -1;

    function show(items) {
      list.innerHTML = "";
      active = -1;
      items.forEach(function (item) {
        var li = document.createElement("li");
        li.setAttribute("role", "option");
        var a = document.createElement("a");
        a.href = item.url;
        var title = document.createElement("span");
        title.textContent = item.title;
        var kind = document.createElement("span");
        kind.className = "kind";
        kind.textContent = item.kind;
        a.appendChild(title);
        a.appendChild(kind);
        li.appendChild(a);
        list.appendChild(li);
      });
      list.hidden = items.length === 0;
    }

    input.addEventListener("input", function () {
      var q = input.value.trim();
      if (pending) pending.abort();
      if (q.length < 2) { show([]); return; }
      pending = new AbortController();
      fetch(input.dataset.suggest + "?q=" + encodeURIComponent(q), { signal: pending.signal })
        .then(function (r) { return r.ok ? r.json() : { suggestions: [] }; })
        .then(function (data) { show(data.suggestions || []); })
        .catch(function () {});
    });
    input.addEventListener("keydown", function (event) {
      var options = list.querySelectorAll("a");
      if (!options.length) return;
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        event.preventDefault();
        active = (active + (event.key === "ArrowDown" ? 1 : -1) + options.length) % options.length;
        options.forEach(function (a, i) { a.parentNode.setAttribute("aria-selected", i === active); });
      } else if (event.key === "Enter" && active >= 0) {
        event.preventDefault();
        window.location.href = options[active].href;
      } else if (event.key === "Escape") {
        show([]);
      }
    });
    document.addEventListener("click", function (event) {
      if (!list.contains(event.target) && event.target !== input) show([]);
    });
  }

  // Citation formats as tabs: the links above the panels select one panel and hide the others.
  function enableCitationTabs() {
    var links = document.querySelectorAll("a.cite-tab[data-panel]");
    if (!links.length) return;
    var list = links[0].closest("ul");
    var section = list.parentNode;
    section.classList.add("cite-tabbed");
    list.setAttribute("role", "tablist");
    list.setAttribute("aria-label", "Citation formats");

    function select(index, focus) {
      links.forEach(function (link, i) {
        var panel = document.getElementById(link.dataset.panel);
        var chosen = i === index;
        link.setAttribute("aria-selected", chosen ? "true" : "false");
        link.tabIndex = chosen ? 0 : -1;
        panel.hidden = !chosen;
        if (chosen && focus) link.focus();
      });
    }

    links.forEach(function (link, i) {
      var panel = document.getElementById(link.dataset.panel);
      link.parentNode.setAttribute("role", "presentation");
      link.setAttribute("role", "tab");
      link.id = link.dataset.panel + "-tab";
      link.setAttribute("aria-controls", panel.id);
      panel.setAttribute("role", "tabpanel");
      panel.setAttribute("aria-labelledby", link.id);
      link.addEventListener("click", function (event) {
        event.preventDefault();
        select(i, false);
      });
      link.addEventListener("keydown", function (event) {
        if (event.key !== "ArrowRight" && event.key !== "ArrowLeft") return;
        event.preventDefault();
        select((i + (event.key === "ArrowRight" ? 1 : -1) + links.length) % links.length, true);
      });
    });
    var linked = Array.prototype.findIndex.call(links, function (link) {
      return "#" + link.dataset.panel === window.location.hash;
    });
    select(Math.max(linked, 0), false);
  }

  // Keyboard access to what scrolls sideways (a wide table or chart on a phone, long JSON):
  // a box that scrolls takes focus, so that arrow keys scroll it, and is a region named by its
  // table's caption or its section's heading, so that a screen reader says what took focus.
  // Checked again when the window is resized or a <details> opens, since either changes what
  // overflows.
  function scrollerName(box) {
    var named = box.querySelector("caption") || box.querySelector("svg title");
    var section = box.closest("section");
    if (!named && section) named = section.querySelector("h2, h3");
    var text = named ? named.textContent.replace(/\s+/g, " ").trim() : "";
    return (text || "Content") + " (scrolls sideways)";
  }

  function focusableScrollers() {
    document.querySelectorAll(".scroll, pre").forEach(function (box) {
      var scrolls = box.scrollWidth > box.clientWidth;
      if (scrolls && !box.hasAttribute("tabindex")) {
        box.tabIndex = 0;
        if (!box.hasAttribute("role")) {
          box.setAttribute("role", "region");
          box.setAttribute("aria-label", scrollerName(box));
        }
        box.dataset.scrollFocus = "";
      } else if (!scrolls && "scrollFocus" in box.dataset) {
        box.removeAttribute("tabindex");
        if (box.getAttribute("role") === "region") {
          box.removeAttribute("role");
          box.removeAttribute("aria-label");
        }
        delete box.dataset.scrollFocus;
      }
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    enableCopyButtons();
    enableSuggestions();
    enableCitationTabs();
    focusableScrollers();
    window.addEventListener("resize", focusableScrollers);
    document.addEventListener("toggle", focusableScrollers, true);
  });
})();
