// memrouter ui: the graph's drawing, the live team board, the time travel slider. No inline scripts (see the CSP).
"use strict";

async function fetchFragment(url) {
  const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "text/html" } });
  if (!response.ok) throw new Error(`${url}: ${response.status}`);
  return response.text();
}

// The graph: selecting a node opens or closes its edges. The links work without script (a new page);
// here the drawing is swapped in place and the focus stays on the node.
function setUpGraph() {
  const holder = document.getElementById("graph");
  if (!holder) return;
  holder.addEventListener("click", async (event) => {
    const link = event.target.closest("a[data-drawing]");
    if (!link) return;
    event.preventDefault();
    const name = link.dataset.node;
    const address = link.getAttribute("href");
    try {
      holder.innerHTML = await fetchFragment(link.dataset.drawing); // server-rendered, escaped
      history.pushState({ graph: true }, "", address);
      const again = [...holder.querySelectorAll("a[data-node]")].find((node) => node.dataset.node === name);
      if (again) again.focus();
    } catch (error) {
      window.location.assign(address);
    }
  });
  window.addEventListener("popstate", () => window.location.reload());
}

// The team board: server-sent events push it when the team changes; without them (no EventSource, or the
// stream refused), the board is fetched every data-every ms instead.
function setUpLive() {
  for (const region of document.querySelectorAll("[data-live]")) {
    const every = Number(region.dataset.every) || 2000;
    const show = (html, via) => {
      region.innerHTML = html; // server-rendered, escaped
      region.dataset.via = via;
      region.dataset.refreshed = String(Number(region.dataset.refreshed || 0) + 1);
    };
    let polling = null;
    const poll = () => {
      if (polling !== null) return;
      polling = setInterval(async () => {
        try {
          show(await fetchFragment(region.dataset.live), "polling");
        } catch (error) {
          region.dataset.error = String(error);
        }
      }, every);
    };
    if (!region.dataset.events || typeof EventSource !== "function") {
      poll();
      continue;
    }
    const source = new EventSource(region.dataset.events);
    source.addEventListener("board", (event) => show(event.data, "events"));
    source.addEventListener("error", () => {
      if (source.readyState === EventSource.CLOSED) poll(); // refused for good; reconnecting is automatic
    });
  }
}

// The time travel slider: oldest commit on the left, "now" on the right; it fills the as_of field.
function setUpSlider() {
  const slider = document.getElementById("as_of_slider");
  const field = document.getElementById("as_of");
  const shown = document.getElementById("as_of_shown");
  if (!slider || !field || !shown) return;
  const commits = JSON.parse(slider.dataset.commits || "[]");
  const at = commits.findIndex((c) => c.commit === field.value.trim());
  if (at >= 0) slider.value = String(at);
  const show = () => {
    const picked = commits[Number(slider.value)];
    shown.textContent = picked ? picked.label : "now";
    slider.setAttribute("aria-valuetext", shown.textContent);
    return picked;
  };
  show();
  slider.addEventListener("input", () => {
    const picked = show();
    field.value = picked ? picked.commit : "";
  });
  slider.addEventListener("change", () => {
    if (document.getElementById("q").value.trim()) slider.form.requestSubmit();
  });
}

document.addEventListener("DOMContentLoaded", () => {
  setUpGraph();
  setUpLive();
  setUpSlider();
});
