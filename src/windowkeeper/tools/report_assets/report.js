"use strict";
(function () {
  const started = performance.now();
  const data = JSON.parse(document.getElementById("data").textContent);
  const SVGNS = "http://www.w3.org/2000/svg";
  const MARKERS = {
    truncated: ["\u25BC", "turns hidden"],
    replaced: ["\u25C6", "duplicate reads replaced"],
    summarize: ["\u2605", "summary asked"],
    continuation: ["\u25A0", "folded"],
    overflow: ["\u2716", "over the window"],
    masked: ["\u25B2", "outputs masked"],
    clipped: ["\u2702", "blocks clipped"],
    distrusted: ["?", "usage distrusted"],
    cache_break: ["\u25CB", "cache break"],
    invalid: ["!", "invalid request"],
  };
  const fmt = (n) => (n === null || n === undefined ? "-" : Number(n).toLocaleString("en-US"));
  const el = (tag, attrs, text) => {
    const node = document.createElement(tag);
    for (const key in attrs || {}) node.setAttribute(key, attrs[key]);
    if (text !== undefined) node.textContent = text;
    return node;
  };
  const svg = (tag, attrs) => {
    const node = document.createElementNS(SVGNS, tag);
    for (const key in attrs) node.setAttribute(key, attrs[key]);
    return node;
  };

  function markersOf(record, detail) {
    const found = [];
    if (record.truncated) found.push("truncated");
    if (record.replaced_reads) found.push("replaced");
    if (record.condense) found.push(record.condense);
    if (record.overflow) found.push("overflow");
    (detail.kinds || []).forEach((k) => { if (MARKERS[k] && found.indexOf(k) < 0) found.push(k); });
    if (detail.cache_break) found.push("cache_break");
    if (detail.violations) found.push("invalid");
    return found;
  }

  function summary() {
    const section = document.getElementById("summary");
    const p = data.prices;
    section.appendChild(el("h2", {}, "Summary"));
    section.appendChild(el("p", { id: "price-model" },
      "Price model: " + p.text + " (billed cost: the prefix reused from the previous request is read" +
      " from the cache, the rest of the input written to it, the recorded answer is output)."));
    const table = el("table", { id: "summary-table" });
    const head = ["policy", "requests", "tokens sent", "billed cost", "cache reuse", "truncations",
      "replaced reads", "summaries", "overflows", "violations", "largest requests"];
    const tr = el("tr");
    head.forEach((h) => tr.appendChild(el("th", { scope: "col" }, h)));
    table.appendChild(tr);
    data.policies.forEach((pol) => {
      const s = pol.replay.summary;
      const worst = pol.replay.requests.map((r, i) => [r.estimated_tokens, i])
        .sort((a, b) => b[0] - a[0]).slice(0, 3).map((w) => "#" + (w[1] + 1) + " " + fmt(w[0]));
      const row = el("tr", { "data-policy": pol.replay.policy });
      [pol.replay.policy, fmt(s.requests), fmt(s.estimated_tokens_sent), Number(pol.cost).toLocaleString("en-US", { maximumFractionDigits: 4 }),
        (pol.cache_reuse * 100).toFixed(1) + " %", fmt(s.truncations), fmt(s.replaced_reads),
        fmt(s.condensations || 0), fmt(s.overflows),
        fmt(s.overflows) + " over the window, " + fmt(pol.invalid_requests) + " invalid", worst.join(", ")]
        .forEach((c, i) => row.appendChild(el(i ? "td" : "th", i ? { "data-col": head[i] } : { scope: "row" }, c)));
      table.appendChild(row);
    });
    section.appendChild(table);
    const legend = el("p", { class: "legend" });
    for (const key in MARKERS) legend.appendChild(el("span", {}, MARKERS[key][0] + " " + MARKERS[key][1]));
    legend.appendChild(el("span", {}, "dark bar: read from cache; light bar: written; dashed line: limit; solid line: window"));
    section.appendChild(legend);
  }

  const bars = [];
  const tip = el("div", { id: "tooltip", role: "tooltip", hidden: "" });
  function numbers(pol, i) {
    const r = pol.replay.requests[i], d = pol.details[i];
    const marks = markersOf(r, d);
    return "request " + (i + 1) + " (history length " + r.index + "): " + fmt(r.estimated_tokens) +
      " tokens sent of a " + fmt(pol.replay.window.context_window) + " window; cache read " + fmt(d.cache_read) +
      ", written " + fmt(d.cache_write) + "; reported " + fmt(r.reported_tokens) +
      (marks.length ? "; " + marks.map((m) => MARKERS[m][1]).join(", ") : "");
  }
  function showTip(g, pol, i) {
    tip.textContent = numbers(pol, i);
    tip.hidden = false;
    const box = g.querySelector("rect.sent").getBoundingClientRect(); // above the bar's top
    tip.style.left = Math.max(0, Math.min(window.innerWidth - 360, box.left + 12) + window.scrollX) + "px";
    tip.style.top = (box.top + window.scrollY - 8) + "px";
  }
  const hideTip = () => { tip.hidden = true; };
  function timeline(pol, pi) {
    const section = document.getElementById("timelines");
    const w = pol.replay.window;
    const records = pol.replay.requests;
    section.appendChild(el("h2", {}, "Timeline: " + pol.replay.policy + " (window " + fmt(w.context_window) + ", limit " + fmt(w.limit) + ")"));
    const wrap = el("div", { class: "timeline" });
    const step = 6, height = 220, top = 20;
    const maxTokens = Math.max(w.context_window, ...records.map((r) => r.estimated_tokens)) * 1.05;
    const y = (v) => top + height - (v / maxTokens) * height;
    const root = svg("svg", { width: records.length * step + 40, height: height + top + 30, role: "list", "aria-label": "requests of " + pol.replay.policy });
    [["limit", w.limit, "4 3"], ["window", w.context_window, ""]].forEach(([name, v, dash]) => {
      root.appendChild(svg("line", { x1: 0, x2: records.length * step + 40, y1: y(v), y2: y(v), stroke: "#000", "stroke-dasharray": dash }));
    });
    records.forEach((r, i) => {
      const d = pol.details[i];
      const g = svg("g", { class: "bar", tabindex: i ? "-1" : "0", role: "listitem", "data-policy": pi, "data-request": i, "aria-describedby": "tooltip" });
      const x = 20 + i * step;
      const marks = markersOf(r, d);
      g.setAttribute("aria-label", numbers(pol, i));
      g.appendChild(svg("rect", { class: "hit", x: x - 0.5, width: step, y: 0, height: height + top + 30, fill: "transparent" }));
      g.appendChild(svg("rect", { class: "sent", x: x, width: step - 1, y: y(r.estimated_tokens), height: y(0) - y(r.estimated_tokens), fill: "#9cc3e6" }));
      g.appendChild(svg("rect", { x: x, width: step - 1, y: y(d.cache_read), height: y(0) - y(d.cache_read), fill: "#2b5d8a" }));
      marks.forEach((m, k) => {
        const t = svg("text", { class: "marker", "data-kind": m, "data-request": i, x: x, y: top - 6 + height + 14 + k * 10, "font-size": 9 });
        t.textContent = MARKERS[m][0];
        if (m !== "cache_break") { t.setAttribute("y", y(r.estimated_tokens) - 3 - k * 9); }
        g.appendChild(t);
      });
      g.addEventListener("click", () => open(pi, i));
      g.addEventListener("mouseenter", () => showTip(g, pol, i));
      g.addEventListener("mouseleave", hideTip);
      g.addEventListener("focus", () => showTip(g, pol, i));
      g.addEventListener("blur", hideTip);
      g.addEventListener("keydown", (e) => {
        // One tab stop per timeline (the open request); arrows, Home and End move between requests.
        const moves = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: records.length - 1 };
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); open(pi, i); }
        else if (e.key in moves) {
          e.preventDefault();
          const next = Math.max(0, Math.min(records.length - 1, moves[e.key]));
          open(pi, next);
          bars[pi][next].focus();
        }
      });
      root.appendChild(g);
      (bars[pi] = bars[pi] || []).push(g);
    });
    wrap.appendChild(root);
    section.appendChild(wrap);
  }

  function blockText(b) {
    if (typeof b === "string") return b;
    if (!b || typeof b !== "object") return JSON.stringify(b);
    if (b.type === "text") return String(b.text || "");
    if (b.type === "tool_use") return "[tool_use " + b.name + " " + b.id + "] " + JSON.stringify(b.input || {});
    if (b.type === "tool_result") {
      const inner = typeof b.content === "string" ? [b.content] : (b.content || []).map(blockText);
      return ["[tool_result " + b.tool_use_id + "]"].concat(inner).join("\n");
    }
    if (b.type === "thinking") return "[thinking]\n" + (b.thinking || "");
    return JSON.stringify(b);
  }
  const textOf = (m) => (typeof m.content === "string" ? m.content : (m.content || []).map(blockText).join("\n"));
  const LONG = 400; // characters shown before "show all": the rest stays in the embedded JSON

  // A clip is [message, block, characters kept, characters the block held].
  const clipText = (c) => "clipped history[" + c[0] + "] block " + c[1] + ": " + fmt(c[3] - c[2]) + " of " + fmt(c[3]) + " characters cut (" + fmt(c[2]) + " kept)";

  function messageNode(label, message, original, clipped) {
    const box = el("div", { class: "msg" + (original ? " changed" : "") });
    box.appendChild(el("div", { class: "head" }, label + " " + message.role + (original ? " (changed by the policy: was " + fmt(textOf(original).length) + " characters, now " + fmt(textOf(message).length) + ")" : "")));
    (clipped || []).forEach((c) => box.appendChild(el("div", { class: "clipped" }, "\u2702 " + clipText(c))));
    const text = textOf(message);
    const body = el("div", { class: "body" }, text.length > LONG ? text.slice(0, LONG) : text);
    box.appendChild(body);
    if (text.length > LONG) {
      const more = el("button", { type: "button" }, "show all " + fmt(text.length) + " characters");
      more.addEventListener("click", () => { body.textContent = text; more.remove(); });
      box.appendChild(more);
    }
    if (original) {
      const was = el("details", {});
      was.appendChild(el("summary", {}, "what it replaced"));
      was.addEventListener("toggle", () => {
        if (was.open && was.childNodes.length === 1) was.appendChild(el("div", {}, textOf(original).slice(0, 20 * LONG)));
      });
      box.appendChild(was);
    }
    return box;
  }

  function growth(pol, upto) {
    // Where the hidden range grew, up to request `upto`: [start, end, request number, reason].
    const found = [];
    let end = 1;
    pol.replay.requests.slice(0, upto + 1).forEach((r, i) => {
      const range = r.deleted_range;
      if (range && range[1] > end) {
        const d = pol.details[i];
        const reason = d.driving === null ? "the policy's own estimate was over the limit"
          : "previous request at " + Math.round((d.driving / pol.replay.window.context_window) * 100) + " % of the window";
        found.push([end + 1, range[1], i + 1, reason]);
        end = range[1];
      }
    });
    return found;
  }

  function open(pi, i) {
    const pol = data.policies[pi];
    const r = pol.replay.requests[i];
    const d = pol.details[i];
    document.querySelectorAll(".bar.selected").forEach((b) => b.classList.remove("selected"));
    bars[pi].forEach((b) => { if (b.getAttribute("tabindex") === "0") b.setAttribute("tabindex", "-1"); });
    bars[pi][i].classList.add("selected");
    bars[pi][i].setAttribute("tabindex", "0");
    const view = document.getElementById("request");
    view.textContent = "";
    view.appendChild(el("h2", { id: "request-title" }, "Request " + (i + 1) + " of " + pol.replay.policy + ": " + d.count + " messages, " + fmt(r.estimated_tokens) + " tokens"));
    const marks = markersOf(r, d).map((m) => MARKERS[m][1]);
    view.appendChild(el("p", {}, "history length " + r.index + "; hidden " + (r.deleted_range ? r.deleted_range.join("-") : "none") +
      "; cache read " + fmt(d.cache_read) + ", written " + fmt(d.cache_write) + (marks.length ? "; " + marks.join(", ") : "")));
    const diff = el("p", { class: "diff" });
    diff.textContent = i === 0 ? "first request: nothing to reuse" :
      "against request " + i + ": the first " + d.common + " messages are unchanged (reused by the cache)" +
      (d.cache_break ? "; the cache breaks at message " + d.common + " (the previous request's messages from there on are not sent as they were)" : "; nothing earlier changed");
    view.appendChild(diff);
    (d.actions || []).forEach((a) => {
      view.appendChild(el("p", { class: "action" }, "action " + a.step + ": messages " + (a.messages.join(", ") || "none") +
        " changed; estimate " + fmt(a.tokens_before) + " \u2192 " + fmt(a.tokens_after) + " tokens" +
        (a.clips.length ? "; " + a.clips.map(clipText).join("; ") : "")));
    });
    if (d.violations) {
      const v = el("div", { class: "violations", role: "note" });
      v.appendChild(el("p", {}, "invalid request: " + fmt(d.violations.count) + " violation" + (d.violations.count === 1 ? "" : "s") + " of the provider's rules (windowkeeper's validator)"));
      const ul = el("ul");
      d.violations.first.forEach((text) => ul.appendChild(el("li", {}, text)));
      v.appendChild(ul);
      view.appendChild(v);
    }
    const clips = {};
    (d.actions || []).forEach((a) => a.clips.forEach((c) => { (clips[c[0]] = clips[c[0]] || []).push(c); }));
    const ranges = growth(pol, i);
    const list = el("div", { id: "messages" });
    let position = 0;
    const history = data.history;
    const runs = d.runs;
    runs.forEach((run, k) => {
      if (k > 0 && run[0] > runs[k - 1][1] + 1) {
        ranges.filter((g) => g[1] >= runs[k - 1][1] + 1 && g[0] <= run[0] - 1).forEach((g) => {
          list.appendChild(el("div", { class: "hidden-range", role: "note" }, "messages " + g[0] + "-" + g[1] + " hidden at request " + g[2] + ": " + g[3]));
        });
        if (k === 1 && d.extra.length) d.extra.forEach((v) => list.appendChild(messageNode("[" + (position++) + "] summary after a fold:", pol.variants[v], null)));
      }
      for (let idx = run[0]; idx <= run[1]; idx++) {
        const changed = d.changed[String(idx)] === undefined ? null : pol.variants[d.changed[String(idx)]];
        const original = pol.history_length === history.length || idx < history.length ? history[idx] : null;
        list.appendChild(messageNode("[" + (position++) + "] history[" + idx + "]", changed || original || { role: "?", content: "" }, changed ? original : null, clips[idx]));
      }
    });
    view.appendChild(list);
  }

  summary();
  data.policies.forEach(timeline);
  document.body.appendChild(tip);
  // A link such as report.html#request=0-80 opens request 81 of the first policy.
  const wanted = /^#request=(\d+)-(\d+)$/.exec(window.location.hash);
  if (wanted && bars[Number(wanted[1])] && bars[Number(wanted[1])][Number(wanted[2])]) open(Number(wanted[1]), Number(wanted[2]));
  document.body.setAttribute("data-render-ms", String(Math.round(performance.now() - started)));
  document.body.setAttribute("data-ready", "true");
})();
