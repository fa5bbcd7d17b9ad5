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
