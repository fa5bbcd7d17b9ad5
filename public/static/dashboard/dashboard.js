// Progressive enhancement for the dashboard; every form works without this file.
//  - copy buttons next to secrets shown once (data-copy: a field's id) and
//    next to ids (data-copy-text: the text itself);
//  - a confirmation dialog for destructive forms (data-confirm): without
//    JavaScript the server asks on a second page instead.
"use strict";

for (const button of document.querySelectorAll("button[data-copy], button[data-copy-text]")) {
  button.hidden = false;
  button.addEventListener("click", async () => {
    const field = button.dataset.copy ? document.getElementById(button.dataset.copy) : null;
    const text = button.dataset.copyText ?? field?.value;
    if (text === undefined) return;
    // A button named by aria-label (a copy button in a list) announces the outcome by it too.
    const say = (/** @type {string} */ words) => {
      button.textContent = words;
      if (button.hasAttribute("aria-label")) button.setAttribute("aria-label", words);
    };
    try {
      await navigator.clipboard.writeText(text);
      say("Copied");
    } catch {
      field?.select();
      say(field ? "Press Ctrl+C" : "Select and copy");
    }
  });
}

document.addEventListener("submit", (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || !form.dataset.confirm) return;
  if (!window.confirm(form.dataset.confirm)) {
    event.preventDefault();
    return;
  }
  const confirmed = form.querySelector('input[name="confirmed"]');
  if (confirmed) confirmed.value = "yes";
});

// Lists as stacked cards on a phone: each cell is labelled with its column's heading (data-label,
// shown by the CSS below 600 px), so a row reads "To 5511… / Text …" instead of scrolling sideways
// and hiding the recipient and the text. Without JavaScript the table scrolls inside its box.
for (const wrap of document.querySelectorAll(".table-wrap")) {
  const table = wrap.querySelector("table");
  if (!table) continue;
  const headings = [...table.querySelectorAll("thead th")].map((th) => th.textContent.trim());
  for (const row of table.querySelectorAll("tbody tr")) {
    [...row.children].forEach((cell, i) => {
      if (headings[i]) cell.dataset.label = headings[i];
    });
  }
  wrap.classList.add("cards");
}
