"""The HTML report's style sheet and its one script, inline (the report is one file that works offline).

The script only draws the episode list and an episode's drill-down, on demand, from the embedded episode data (gzip,
then base64: about a tenth of the JSON's size at 10,000 episodes). Every value from the data is set as text
(`textContent`), never parsed as HTML, so names from scenario files cannot become markup.
"""

from __future__ import annotations

CSS = """
:root { --fg: #1d1f23; --muted: #5c6370; --line: #d9dce1; --stripe: #f6f7f9; --accent: #0072B2; --hazard: #b35806;
  --hazard-bg: #fdf1e4; --error: #b2182b; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--fg); background: #fff; font: 14px/1.45 system-ui, -apple-system, "Segoe UI",
  Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 24px 28px 48px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 32px 0 4px; padding-top: 8px; border-top: 1px solid var(--line); }
h3 { font-size: 15px; margin: 18px 0 4px; }
.meta, .blurb, .empty, footer { color: var(--muted); }
.blurb { margin: 0 0 10px; max-width: 980px; }
.empty { font-style: italic; }
nav { margin: 14px 0 4px; display: flex; flex-wrap: wrap; gap: 4px 14px; font-size: 13px; }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 18px 0 6px; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 10px 16px; min-width: 200px; }
.card .label { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.card .label.agent { text-transform: none; letter-spacing: 0; font-size: 13px; font-weight: 600; color: var(--fg); }
.card .value { font-size: 22px; font-weight: 600; }
.card .sub { color: var(--muted); font-size: 12px; }
table { border-collapse: collapse; margin: 6px 0 4px; font-variant-numeric: tabular-nums; }
th, td { padding: 4px 12px 4px 8px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { font-weight: 600; background: var(--stripe); white-space: nowrap; }
tbody tr:nth-child(even) td { background: #fbfbfc; }
td.num, th.num { text-align: right; white-space: nowrap; }
td { overflow-wrap: anywhere; }
table.facts th { background: none; font-weight: 600; }
table.heat td.cell { text-align: center; white-space: nowrap; min-width: 96px; }
table.heat td.cell a { color: inherit; display: block; }
tbody tr td.heat-cell { background: var(--heat); color: var(--ink); }
tbody tr td.off { background: #eceef1; color: var(--muted); font-style: italic; }
.legend { display: flex; align-items: center; gap: 8px; font-size: 12px; color: var(--muted); margin: 2px 0 6px; }
.legend .ramp { width: 160px; height: 10px; border-radius: 2px;
  background: linear-gradient(90deg, #b2182b, #ef8a62, #f7f7f7, #67a9cf, #2166ac); }
.legend .off { background: #eceef1; padding: 0 6px; font-style: italic; }
figure { margin: 10px 0 14px; }
svg.plot { max-width: 100%; height: auto; font-family: inherit; }
svg .plot-title { font-size: 14px; font-weight: 600; fill: var(--fg); }
svg .label, svg .legend { font-size: 12px; fill: var(--fg); }
svg .tick, svg .value { font-size: 11px; fill: var(--muted); }
svg .grid { stroke: #eceef1; }
svg .axis { stroke: #8a9099; fill: none; }
svg .whisker { stroke: var(--fg); stroke-width: 1.5; fill: none; }
svg .reference { stroke: #D55E00; stroke-width: 1.5; stroke-dasharray: 5 4; }
svg .line { fill: none; stroke-width: 2.5; }
svg .frame { fill: #fafafa; stroke: var(--line); }
svg .empty { font-size: 13px; fill: var(--muted); font-style: italic; }
ul.warnings { padding-left: 20px; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  font-size: 12px; }
ul.nothing li { margin: 2px 0; }
details > summary { cursor: pointer; color: var(--accent); margin: 8px 0; }
#episode-filter { margin: 6px 0; }
#episode-list td { white-space: nowrap; }
#episode-list td.wrap { white-space: normal; }
.ok { color: #1a7f37; font-weight: 600; }
.bad { color: var(--error); font-weight: 600; }
button.more { margin: 8px 0; font: inherit; padding: 4px 12px; cursor: pointer; }
#episode { scroll-margin-top: 12px; }
table.timeline { width: 100%; }
table.timeline td { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; }
table.timeline td.what { width: 30%; }
table.timeline td.sent { width: 22%; }
details.whole > summary { color: inherit; margin: 0; list-style: none; }
details.whole > summary::-webkit-details-marker { display: none; }
details.whole .more, details.whole .less { color: var(--accent); white-space: nowrap; font-family: system-ui,
  sans-serif; font-size: 12px; }
details.whole .less, details.whole[open] .more, details.whole[open] .clip { display: none; }
details.whole[open] .less { display: inline; }
.whole-text { white-space: pre-wrap; overflow-wrap: anywhere; margin-top: 2px; }
ul.notes { margin: 4px 0; padding-left: 20px; }
ul.notes li { margin: 2px 0; }
table.timeline tr.hazard td { background: var(--hazard-bg); }
table.timeline tr.hazard td.what::before { content: "⚡ injected · "; color: var(--hazard); font-weight: 600; }
table.timeline tr.error td.what { color: var(--error); }
table.timeline tr.answer td { font-weight: 600; }
table.hazards tr.error td { color: var(--error); }
footer { margin-top: 36px; font-size: 12px; }
@media print { h2 { break-after: avoid; } figure, tr { break-inside: avoid; } }
"""

SCRIPT = r"""
(function () {
  "use strict";
  var PAGE = 100;
  var LIMITS = {what: 240, sent: 160, got: 240, answer: 300};  // characters shown before "show all"
  var source = document.getElementById("episode-data");
  var listSection = document.getElementById("episodes");
  var view = document.getElementById("episode");
  var rows = null, loading = null, shown = PAGE, lastList = "#episodes";
  var NAMES = {agent: "agent", scenario: "scenario", item: "task", condition: "condition", interventions:
    "interventions", profile: "profile", seed: "seed", setting: "setting", workflow: "workflow", golden_length:
    "golden-path length", "class": "outcome", agent_outcome: "agent outcome", hazard_kinds: "hazard kinds",
    hazards_fired: "hazards fired", call_failures: "failed calls"};

  function el(tag, attrs) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) { node.setAttribute(key, attrs[key]); });
    for (var i = 2; i < arguments.length; i++) {
      var child = arguments[i];
      if (child === null || child === undefined) continue;
      node.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
    }
    return node;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }

  function load() {
    if (rows) return Promise.resolve(rows);
    if (!loading) {
      if (typeof DecompressionStream === "undefined") {
        return Promise.reject(new Error("this browser cannot unpack the episode data (it needs DecompressionStream: " +
          "Chrome 80, Firefox 113 or Safari 16.4 and later)"));
      }
      var text = atob(source.textContent.trim());
      var bytes = new Uint8Array(text.length);
      for (var i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
      var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
      loading = new Response(stream).text().then(function (json) { rows = JSON.parse(json); return rows; });
    }
    return loading;
  }

  function parseFilter(hash) {
    var query = hash.indexOf("?") < 0 ? "" : hash.slice(hash.indexOf("?") + 1);
    var filter = {};
    new URLSearchParams(query).forEach(function (value, key) { filter[key] = value; });
    return filter;
  }
  function matches(row, filter) {
    return Object.keys(filter).every(function (key) {
      var value = row[key], wanted = filter[key];
      if (Array.isArray(value)) return wanted === "*" ? value.length > 0 : value.indexOf(wanted) >= 0;
      return wanted === "*" ? Boolean(value) : String(value) === wanted;
    });
  }
  function describe(filter) {
    var parts = Object.keys(filter).map(function (key) {
      var list = ["hazard_kinds", "hazards_fired", "call_failures"].indexOf(key) >= 0;
      var name = NAMES[key] || key;
      if (filter[key] === "*") return name + " (any)";
      return name + (list ? " include " : " = ") + filter[key];
    });
    return parts.length ? parts.join(", ") : "all episodes";
  }
  function verdict(row) {
    return row.correct ? el("span", {"class": "ok"}, "✓ correct") : el("span", {"class": "bad"}, "✗ " + row["class"]);
  }
  function hazardsCell(row) {
    if (!row.hazards.length) return "–";
    var recovered = row.hazards.filter(function (h) { return h.recovered; }).length;
    return recovered + "/" + row.hazards.length + " recovered";
  }

  function showList(hash) {
    var filter = parseFilter(hash);
    lastList = hash;
    view.hidden = true;
    var status = document.getElementById("episode-filter");
    var body = document.querySelector("#episode-list tbody");
    status.textContent = "Loading the episodes…";
    load().then(function (all) {
      var found = all.filter(function (row) { return matches(row, filter); });
      clear(status);
      status.appendChild(el("strong", {}, found.length + " of " + all.length + " episodes"));
      status.appendChild(document.createTextNode(": " + describe(filter) + " "));
      if (Object.keys(filter).length) status.appendChild(el("a", {href: "#episodes"}, "(show all)"));
      clear(body);
      found.slice(0, shown).forEach(function (row) {
        body.appendChild(el("tr", {},
          el("td", {}, el("a", {href: "#episode/" + row.index}, row.agent + " · " + row.item)),
          el("td", {"class": "wrap"}, row.condition), el("td", {}, row.interventions), el("td", {}, row.profile),
          el("td", {"class": "num"}, row.seed), el("td", {}, verdict(row)), el("td", {}, hazardsCell(row)),
          el("td", {"class": "num"}, row.calls)));
      });
      var pager = document.getElementById("episode-pager");
      clear(pager);
      if (found.length > shown) {
        var more = el("button", {"class": "more", type: "button"}, "Show " + Math.min(PAGE, found.length - shown) +
          " more (" + (found.length - shown) + " not shown)");
        more.addEventListener("click", function () { shown += PAGE; showList(hash); });
        pager.appendChild(more);
      }
    }).catch(function (error) { status.textContent = "Cannot show the episodes: " + error.message; });
  }

  function facts(pairs) {
    var table = el("table", {"class": "facts"}), body = el("tbody", {});
    pairs.forEach(function (pair) {
      body.appendChild(el("tr", {}, el("th", {scope: "row"}, pair[0]), el("td", {}, pair[1])));
    });
    table.appendChild(body);
    return table;
  }
  function grid(kind, columns, items, cells, rowClass, classes) {
    var table = el("table", {"class": "data " + kind}), head = el("tr", {}), body = el("tbody", {});
    classes = classes || [];
    columns.forEach(function (name, i) {
      head.appendChild(el("th", {scope: "col", "class": classes[i] || ""}, name));
    });
    table.appendChild(el("thead", {}, head));
    items.forEach(function (item) {
      var tr = el("tr", {"class": rowClass ? rowClass(item) : ""});
      cells(item).forEach(function (cell, i) { tr.appendChild(el("td", {"class": classes[i] || ""}, cell)); });
      body.appendChild(tr);
    });
    table.appendChild(body);
    return table;
  }
  // A value on one line, cut at `limit` characters; a longer one opens whole on a click (a <details>), so a wrong
  // value deep in a result can be read where it was shown, not only in the hazard's row.
  function whole(text, limit) {
    if (text === null || text === undefined || text === "") return "";
    text = String(text);
    var line = text.replace(/\s+/g, " ").trim();
    if (line.length <= limit) return line;
    var size = text.length.toLocaleString("en");
    return el("details", {"class": "whole"},
      el("summary", {}, el("span", {"class": "clip"}, line.slice(0, limit - 1) + "…"),
        el("span", {"class": "more"}, " show all " + size + " characters"),
        el("span", {"class": "less"}, "hide (" + size + " characters)")),
      el("div", {"class": "whole-text"}, text));
  }
  function asText(value) {
    if (value === null || value === undefined) return "–";
    if (typeof value === "string") return value;
    if (Array.isArray(value)) return value.map(function (v) { return typeof v === "string" ? v : JSON.stringify(v); })
      .join(", ");
    return JSON.stringify(value);
  }

  function showEpisode(index) {
    load().then(function (all) {
      var row = all[index];
      if (!row) { location.hash = "#episodes"; return; }
      clear(view);
      view.hidden = false;
      view.appendChild(el("p", {}, el("a", {href: lastList}, "← back to the episode list")));
      view.appendChild(el("h2", {id: "episode-title"}, row.agent + " · " + row.item + " · " + row.condition +
        " · seed " + row.seed));
      var answer = row.answered ? whole(row.answer, LIMITS.answer) : "(none)";
      var expected = row.match ? whole(asText(row.expected), LIMITS.answer) :
        "(none: this task has no expected answer)";
      view.appendChild(facts([
        ["verdict", verdict(row)], ["answer", answer], ["expected answer", expected],
        ["matching rule", row.match || "–"], ["decided by", row.answer_rule || "–"],
        ["premature", row.premature_reasons.length ? row.premature_reasons.join("; ") : "no"],
        ["agent outcome", row.agent_outcome], ["interventions", row.interventions], ["profile", row.profile],
        ["tool calls", String(row.calls)], ["seconds", row.duration_s === null ? "–" : String(row.duration_s)],
        ["episode id", row.episode_id || "–"], ["trace", row.trace]]));
      view.appendChild(el("h3", {}, "Hazards that fired"));
      if (row.hazards.length) {
        view.appendChild(grid("hazards", ["hazard", "tool", "call", "failpoint", "recovered", "path"], row.hazards,
          function (h) {
            return [h.kind, h.tool, "#" + h.slot, h.failpoint, h.recovered ? "yes" : "no", h.path || "–"];
          },
          function (h) { return h.recovered ? "" : "error"; }));
      } else {
        view.appendChild(el("p", {"class": "empty"}, "None."));
      }
      view.appendChild(el("h3", {}, "Agent's notes"));
      if (row.notes && row.notes.length) {
        var notes = el("ul", {"class": "notes"});
        row.notes.forEach(function (note) { notes.appendChild(el("li", {}, note)); });
        view.appendChild(notes);
      } else {
        view.appendChild(el("p", {"class": "empty"}, row.notes ? "None: the agent noted nothing." :
          "None recorded: no run log (run.jsonl) beside this trace records the episode."));
      }
      view.appendChild(el("h3", {}, "Timeline"));
      if (row.timeline) {
        view.appendChild(grid("timeline", ["ms", "what", "sent", "shown to the agent"], row.timeline, function (s) {
          return [s[0] === null ? "" : String(s[0]), whole(s[2], LIMITS.what), whole(s[3], LIMITS.sent),
                  whole(s[4], LIMITS.got)];
        }, function (s) { return s[5]; }, ["num", "what", "sent", "got"]));
      } else {
        view.appendChild(el("p", {"class": "empty"}, "No timeline in this report; the trace file has every event."));
      }
      view.scrollIntoView();
    }).catch(function (error) { view.hidden = false; view.textContent = "Cannot show the episode: " + error.message; });
  }

  function route() {
    var hash = location.hash;
    if (hash.indexOf("#episode/") === 0) {
      showEpisode(parseInt(hash.slice(9), 10));
    } else if (hash === "#episodes" || hash.indexOf("#episodes?") === 0) {
      shown = PAGE;
      showList(hash);
      if (hash !== "#episodes") listSection.scrollIntoView();
    }
  }
  window.addEventListener("hashchange", route);
  route();  // nothing is unpacked until an episode list or an episode is asked for
})();
"""
