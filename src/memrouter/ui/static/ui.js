// memrouter ui: expand graph nodes in place, refresh the team board. No inline scripts (see the CSP).
"use strict";

async function fetchFragment(url) {
  const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "text/html" } });
  if (!response.ok) throw new Error(`${url}: ${response.status}`);
  return response.text();
}

function setUpGraph() {
  document.addEventListener("click", async (event) => {
    const button = event.target.closest("button.expand");
    if (!button) return;
    const node = button.closest("li");
    const open = node.querySelector(":scope > .children");
    if (open) {
      open.remove();
      button.setAttribute("aria-expanded", "false");
      return;
    }
    button.disabled = true;
    try {
      const html = await fetchFragment(`/graph/expand?name=${encodeURIComponent(button.dataset.expand)}`);
      const children = document.createElement("div");
      children.className = "children";
      children.innerHTML = html; // server-rendered, escaped
      node.appendChild(children);
      button.setAttribute("aria-expanded", "true");
    } catch (error) {
      button.title = String(error);
    } finally {
      button.disabled = false;
    }
  });
}

function setUpLive() {
  for (const region of document.querySelectorAll("[data-live]")) {
    const every = Number(region.dataset.every) || 2000;
    const refresh = async () => {
      try {
        region.innerHTML = await fetchFragment(region.dataset.live); // server-rendered, escaped
        region.dataset.refreshed = String(Number(region.dataset.refreshed || 0) + 1);
      } catch (error) {
        region.dataset.error = String(error);
      }
    };
    setInterval(refresh, every);
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
