// The join page's words in the browser's language. The server chooses the
// catalogue by Accept-Language and answers it as JSON (GET /join/messages.json,
// from the gettext .po beside the plugin); the English source strings are the
// keys, so a missing entry, or no answer at all, shows English.
let catalogue = {};

export async function loadWords(url) {
  try {
    const response = await fetch(url);
    if (!response.ok) return;
    const answer = await response.json();
    catalogue = answer.messages || {};
    document.documentElement.lang = answer.lang || "en";
  } catch {
    catalogue = {};
  }
}

// t("Downloaded {name}.", { name }) -> the translation with {name} filled in.
export function t(english, values = {}) {
  const text = Object.hasOwn(catalogue, english) ? catalogue[english] : english;
  return text.replace(/\{(\w+)\}/g, (whole, key) => (key in values ? String(values[key]) : whole));
}

// Every element marked data-i18n shows its English text translated.
export function translatePage() {
  for (const element of document.querySelectorAll("[data-i18n]")) {
    element.textContent = t(element.textContent.trim());
  }
  document.title = t(document.title);
}
