// Progressive enhancement for the dashboard; every form works without this file.
//  - copy buttons next to secrets shown once;
//  - a confirmation dialog for destructive forms (data-confirm): without
//    JavaScript the server asks on a second page instead.
"use strict";

for (const button of document.querySelectorAll("button[data-copy]")) {
  button.hidden = false;
  button.addEventListener("click", async () => {
    const field = document.getElementById(button.dataset.copy);
    if (!field) return;
    try {
      await navigator.clipboard.writeText(field.value);
      button.textContent = "Copied";
    } catch {
      field.select();
      button.textContent = "Press Ctrl+C";
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
