// The end user's join page: check a support code (the public, rate-limited
// POST /api/codes/validate), name the technician, hand out the one-file agent
// (POST /api/codes/agent). No login, no inline code: the console's CSP. Its
// words come in the browser's language (words.js).
import { h } from "./dom.js";
import { loadWords, t, translatePage } from "./words.js";

const $ = (id) => document.getElementById(id);
const form = $("join-form");
const input = $("join-code");
const message = $("join-message");
const found = $("join-found");

function say(text) {
  message.textContent = text;
}

async function post(path, code) {
  return fetch(path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ code }),
  });
}

function refusal(response) {
  if (response.status === 404) {
    return t("This code is not valid: it may be mistyped, already used or expired. Check it with your technician.");
  }
  if (response.status === 429) {
    const wait = Number(response.headers.get("retry-after")) || 60;
    const minutes = Math.max(1, Math.ceil(wait / 60));
    return minutes === 1
      ? t("Too many attempts from this network. Please wait {minutes} minute and try again.", { minutes })
      : t("Too many attempts from this network. Please wait {minutes} minutes and try again.", { minutes });
  }
  return t("The server could not check the code right now. Please try again shortly.");
}

function system() {
  const platform = (navigator.userAgentData?.platform || navigator.platform || "").toLowerCase();
  if (platform.includes("win")) return "windows";
  if (platform.includes("mac")) return "mac";
  return "linux";
}

async function download(code, button) {
  button.disabled = true;
  say(t("Preparing your download…"));
  try {
    const response = await post("/api/codes/agent", code);
    if (!response.ok) {
      say(response.status === 404 && (await response.json().catch(() => ({}))).type?.endsWith("no-join-agent")
        ? t("No support program is available on this server yet. Please tell your technician.")
        : refusal(response));
      return;
    }
    const name = /filename="([^"]+)"/.exec(response.headers.get("content-disposition") || "")?.[1]
      || "remote-support.pyz";
    const url = URL.createObjectURL(await response.blob());
    const link = h("a", { href: url, download: name, hidden: true });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
    say(t("Downloaded {name}. Open a terminal in its folder and run: python3 {name}", { name }));
  } finally {
    button.disabled = false;
  }
}

function offer(code, answer) {
  $("join-technician").textContent = answer.technician;
  $("join-organization").textContent = answer.organization ? ` (${answer.organization})` : "";
  const agent = $("join-agent");
  if (!answer.agent_available) {
    agent.replaceChildren(h("p", { id: "join-no-agent" },
      t("No support program is available on this server yet. Please tell your technician.")));
  } else if (system() === "windows") {
    agent.replaceChildren(h("p", { id: "join-no-agent" },
      t("The support program runs on Linux and macOS with Python 3; it is not available for Windows yet.")));
  } else {
    const button = h("button", { id: "join-download", className: "primary", type: "button" },
      t("Download the support program"));
    button.addEventListener("click", () => download(code, button));
    agent.replaceChildren(
      h("p", {}, t("Download the support program, then run it. It needs no installation or administrator rights, and when the session ends it removes everything it unpacked (delete the downloaded file itself when you like). You will be asked to allow the session first.")),
      button);
  }
  found.hidden = false;
  $("join-found-title").focus();
}

async function check(code) {
  found.hidden = true;
  if (!code.trim()) {
    say(t("Please type the support code your technician gave you."));
    input.focus();
    return;
  }
  say(t("Checking…"));
  let response;
  try {
    response = await post("/api/codes/validate", code.trim());
  } catch {
    say(t("The server could not be reached. Check your connection and try again."));
    return;
  }
  if (!response.ok) {
    say(refusal(response));
    input.setAttribute("aria-invalid", "true");
    input.focus();
    return;
  }
  input.removeAttribute("aria-invalid");
  say("");
  offer(code.trim(), await response.json());
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  check(input.value);
});

const fromLink = decodeURIComponent(location.pathname.replace(/^\/join\/?/, ""));
if (fromLink) {
  history.replaceState(null, "", "/join"); // the code stays out of the browser's history
  input.value = fromLink;
} else {
  input.focus();
}

async function start() {
  await loadWords("/join/messages.json");
  translatePage();
  if (fromLink) check(fromLink);
}

start();
