"""The approval page's one script: it keeps the page current and answers in place."""

from __future__ import annotations

SCRIPT_PATH = "/_gate/ui/page.js"
QUESTIONS_PATH = "/_gate/ui/questions"
# Sent with the script's answers: gate then replies in JSON instead of redirecting. Another
# site cannot send it without a CORS preflight, which gate never grants; the cookie and the
# form's CSRF token are checked as for a plain form.
FETCH_HEADER = "x-gate-answer"

# Polls the questions once a second: a card not yet shown is added at the end, a card
# whose question is gone is removed, the others are left untouched (focus, selection and
# scroll stay). An answer is sent with fetch: its card goes and the status line says what
# was answered, the page itself is never reloaded. Keys a, r, b answer the focused card
# (else the first), as in gate watch.
SCRIPT = """"use strict";
(() => {
  const list = document.getElementById("questions");
  const empty = document.getElementById("empty");
  const status = document.getElementById("note");
  const answered = (card) => card.classList.contains("sending");
  const settle = () => { empty.hidden = list.querySelector(".q") !== null; };
  function say(text, bad) {
    status.textContent = text;
    status.classList.toggle("bad", Boolean(bad));
    status.hidden = !text;
  }
  async function refresh() {
    let data;
    try {
      const reply = await fetch("QUESTIONS", {credentials: "same-origin", cache: "no-store"});
      if (!reply.ok) return;
      data = await reply.json();
    } catch (e) { return; }
    const ids = new Set(data.questions.map((q) => q.id));
    for (const card of list.querySelectorAll(":scope > .q")) {
      if (!ids.has(card.id)) card.remove();
    }
    for (const q of data.questions) {
      if (document.getElementById(q.id)) continue;
      const t = document.createElement("template");
      t.innerHTML = q.html;
      list.append(t.content);
    }
    settle();
  }
  function tick() {
    const now = Date.now() / 1000;
    for (const el of document.querySelectorAll("[data-expires]")) {
      el.textContent = String(Math.max(0, Math.round(Number(el.dataset.expires) - now)));
    }
  }
  function refused(card, text) {
    card.classList.remove("sending");
    for (const b of card.querySelectorAll("button")) b.disabled = false;
    let line = card.querySelector(".error");
    if (!line) {
      line = document.createElement("p");
      line.className = "error";
      line.setAttribute("role", "alert");
      card.querySelector("form").before(line);
    }
    line.textContent = text;
  }
  async function answer(form, submitter) {
    const card = form.closest(".q");
    if (answered(card)) return;
    const body = new URLSearchParams(new FormData(form, submitter));
    card.classList.add("sending");
    for (const b of card.querySelectorAll("button")) b.disabled = true;
    let reply = null, data = {};
    try {
      reply = await fetch(form.action, {
        method: "POST", credentials: "same-origin", cache: "no-store",
        headers: {"HEADER": "1"}, body,
      });
      data = await reply.json();
    } catch (e) {
      data = {error: reply ? "gate answered " + reply.status : "gate did not answer"};
    }
    if (reply && (reply.ok || reply.status === 404 || reply.status === 409)) {
      // Answered, or no longer answerable (answered elsewhere, timed out, withdrawn).
      card.remove();
      say(reply.ok ? data.note : data.error, !reply.ok);
      settle();
    } else {
      refused(card, data.error || "gate did not take the answer");
    }
  }
  document.addEventListener("submit", (ev) => {
    if (!ev.target.closest(".q")) return;
    ev.preventDefault();
    answer(ev.target, ev.submitter);
  });
  document.addEventListener("keydown", (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || !["a", "r", "b"].includes(ev.key)) return;
    const focused = document.activeElement && document.activeElement.closest(".q");
    const card = focused || list.querySelector(".q");
    const button = card && !answered(card) && card.querySelector(`button[accesskey="${ev.key}"]`);
    if (button) { ev.preventDefault(); button.click(); }
  });
  setInterval(refresh, 1000);
  setInterval(tick, 1000);
})();
""".replace("QUESTIONS", QUESTIONS_PATH).replace("HEADER", FETCH_HEADER)
