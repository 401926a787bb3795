// Trailcache console: copy buttons and the collapsible navigation on narrow screens. Every
// page works without this file; it only adds conveniences. Event delegation, so content that
// htmx swaps in needs nothing re-bound.
document.documentElement.classList.remove("no-js");

async function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch (error) {
      // Permission refused: fall through to the selection-based copy.
    }
  }
  const area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.style.position = "fixed";
  area.style.opacity = "0";
  document.body.appendChild(area);
  area.select();
  let copied = false;
  try {
    copied = document.execCommand("copy");
  } catch (error) {
    copied = false;
  }
  area.remove();
  return copied;
}

function announce(message) {
  const status = document.getElementById("live-status");
  if (status) {
    status.textContent = "";
    window.setTimeout(() => { status.textContent = message; }, 30);
  }
}

document.addEventListener("click", async (event) => {
  const copy = event.target.closest("button[data-copy]");
  if (copy) {
    const ok = await copyText(copy.dataset.copy);
    copy.classList.toggle("copied", ok);
    announce(ok ? "Copied to the clipboard." : "Copy failed: select the text and copy it by hand.");
    window.setTimeout(() => copy.classList.remove("copied"), 1500);
    return;
  }
  const toggle = event.target.closest("[data-nav-toggle]");
  if (toggle) {
    const open = toggle.getAttribute("aria-expanded") !== "true";
    toggle.setAttribute("aria-expanded", String(open));
    toggle.closest(".topbar").classList.toggle("open", open);
  }
});
