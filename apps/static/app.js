// treppen serve: play, watch and replay in the browser. Plain JS, no build step.
// The server holds the game; this page only shows the table it sends and offers the legal moves of
// the mask. Text from the server or a record file is always set as text, never as HTML.
"use strict";

const SUITS = { S: "♠", H: "♥", D: "♦", C: "♣" };
const SUIT_ORDER = "SHDC";
const RANK_ORDER = "A23456789TJQK";
const params = new URLSearchParams(location.search);
const AGENT_DELAY = Math.max(0, Number(params.get("delay") ?? 450));

const state = {
  tab: "play",
  config: null,
  view: null, // the session's latest answer (play / watch)
  selected: new Set(),
  sortBy: "suit",
  seenSummary: 0, // the last deal whose summary was acknowledged
  busy: false,
  watching: false, // watch mode: playing (not paused)
  timer: null,
  replay: null, // {content, data, frame}
  hint: null, // the position the shown hint belongs to (hintKey)
};

const $ = (id) => document.getElementById(id);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k === "onclick") node.addEventListener("click", v);
    else if (v !== null && v !== undefined && v !== false) node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children) if (c) node.append(c);
  return node;
}

function cardEl(card, attrs = {}) {
  const suit = card[1];
  const rank = card[0] === "T" ? "10" : card[0];
  const red = suit === "H" || suit === "D";
  const { class: extra = "", ...rest } = attrs;
  return el("span", { ...rest, class: `card ${red ? "red" : "black"} ${extra}`, "data-card": card, text: rank + SUITS[suit] });
}

function sortCards(cards) {
  const key = (c) =>
    state.sortBy === "suit"
      ? SUIT_ORDER.indexOf(c[1]) * 13 + RANK_ORDER.indexOf(c[0])
      : RANK_ORDER.indexOf(c[0]) * 4 + SUIT_ORDER.indexOf(c[1]);
  return [...cards].sort((a, b) => key(a) - key(b));
}

function showError(message) {
  const box = $("error");
  box.textContent = message || "";
  box.hidden = !message;
}

async function api(path, options = {}) {
  const response = await fetch(path, options);
  let data = null;
  try {
    data = await response.json();
  } catch (e) {
    data = { error: `${response.status} ${response.statusText}` };
  }
  if (!response.ok) {
    const error = new Error(data.error || `${response.status}`);
    error.status = response.status;
    throw error;
  }
  return data;
}

const post = (path, body) =>
  api(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });

// ------------------------------------------------------------------ setup
function seatName(view, seat) {
  const player = view.table.players[seat];
  return view.you === seat ? "you" : `P${seat} ${player.name}`;
}

function buildSetup() {
  const cfg = state.config;
  const count = $("num-players");
  count.replaceChildren();
  for (let n = cfg.min_players; n <= cfg.max_players; n++) count.append(el("option", { value: n, text: n }));
  $("rules").replaceChildren(...cfg.rules.map((r) => el("option", { value: r, text: r })));
  $("rules").value = cfg.rules.includes("treppenromme") ? "treppenromme" : cfg.rules[0];
  buildSeatChoices();
}

// the person's seat in play mode (null when watching)
function yourSeat() {
  return state.tab === "play" ? Number($("your-seat").value) : null;
}

function buildYourSeat(n) {
  const select = $("your-seat");
  const kept = Math.min(Number(select.value || 0), n - 1);
  select.replaceChildren();
  for (let seat = 0; seat < n; seat++) select.append(el("option", { value: seat, text: `P${seat}` }));
  select.value = String(kept);
}

function buildSeatChoices() {
  const n = Number($("num-players").value);
  buildYourSeat(n);
  $("your-seat-label").hidden = state.tab !== "play";
  const you = yourSeat();
  const box = $("seat-choices");
  const kept = {}; // the agents already picked stay picked
  box.querySelectorAll("select").forEach((s) => (kept[s.id] = s.value));
  box.replaceChildren();
  for (let seat = 0; seat < n; seat++) {
    if (seat === you) {
      box.append(el("span", { class: "seat-you", text: `P${seat} you` }));
      continue;
    }
    const select = el("select", { id: `seat-${seat}`, class: "seat-agent" });
    state.config.agents.forEach((spec, i) => select.append(el("option", { value: i, text: state.config.labels[i] || spec })));
    if (state.tab === "watch") select.value = String(seat % state.config.agents.length);
    if (kept[select.id] !== undefined) select.value = kept[select.id];
    box.append(el("label", { text: `P${seat} ` }, select));
  }
}

async function start() {
  stopTimer();
  const n = Number($("num-players").value);
  const you = yourSeat();
  const seats = [];
  for (let seat = 0; seat < n; seat++) seats.push(seat === you ? "you" : Number($(`seat-${seat}`).value));
  try {
    const view = await post("/api/sessions", { mode: state.tab, seats, rules: $("rules").value, episode: $("episode").value });
    endSession(state.view); // the old game makes room on the server
    state.seenSummary = 0;
    state.watching = false;
    updateWatchButton();
    showError("");
    $("summary").hidden = true;
    show(view);
  } catch (e) {
    showError(e.message);
  }
}

function endSession(view) {
  if (view) fetch(`/api/sessions/${view.session}`, { method: "DELETE", keepalive: true }).catch(() => {});
}

function selectTab(tab) {
  stopTimer();
  state.tab = tab;
  document.querySelectorAll(".tab").forEach((b) => b.classList.toggle("active", b.dataset.tab === tab));
  $("setup-game").hidden = tab === "replay";
  $("watch-controls").hidden = tab !== "watch";
  $("replay-controls").hidden = tab !== "replay";
  $("summary").hidden = true;
  $("table").hidden = true;
  $("download-record").hidden = true;
  delete document.body.dataset.playing;
  endSession(state.view);
  state.view = null;
  showError("");
  if (tab !== "replay") buildSeatChoices();
  if (tab === "replay" && state.replay) showFrame();
}

// ------------------------------------------------------------------ play and watch
function stopTimer() {
  if (state.timer) clearTimeout(state.timer);
  state.timer = null;
}

function summaryPending(view) {
  return Boolean(view.summary && view.summary.deal > state.seenSummary);
}

function logLine(view, entry) {
  if (entry.seat === null) return entry.move;
  const points = entry.points ? ` (${entry.points > 0 ? "+" : ""}${entry.points})` : "";
  return `${seatName(view, entry.seat)}: ${entry.move}${points}`;
}

function show(view) {
  state.view = view;
  document.body.dataset.playing = "1"; // phones fold the setup away (style.css)
  if (view.over && state.watching) {
    state.watching = false; // nothing left to watch
    updateWatchButton();
  }
  const pending = summaryPending(view);
  // a game deals the next deal at once: until the summary is acknowledged, show the finished table
  const ended = pending && view.summary.table.deal !== view.table.deal;
  const table = ended ? view.summary.table : view.table;
  const legal = ended ? null : view.legal;
  for (const c of [...state.selected]) if (!(view.table.players[view.you ?? 0].hand || []).includes(c)) state.selected.delete(c);
  renderTable(table, {
    legal,
    log: view.log.map((e) => ({ text: logLine(view, e) })),
    mine: view.mode === "play" ? view.you : null,
  });
  renderStatus(view, ended);
  const link = $("download-record");
  link.hidden = view.records === 0;
  link.href = `/api/sessions/${view.session}/record`;
  // for scripts and tests: whose turn it is and the table's version
  document.body.dataset.turn = view.over ? "over" : view.your_turn ? "you" : "agent";
  document.body.dataset.phase = view.table.phase;
  document.body.dataset.version = view.version;
  if (pending) showSummary(view);
  schedule(view, pending);
}

function renderStatus(view, ended = false) {
  const t = ended ? view.summary.table : view.table;
  let text;
  if (view.over) text = view.episode === "deal" ? "The deal is over." : "The game is over.";
  else if (ended) text = "The deal is over: its last table (Next deal goes on).";
  else if (view.your_turn) text = t.phase === "draw" ? "Your turn: draw from the stock or take from the staircase." : "Your turn: meld, lay off, then discard a card.";
  else text = view.mode === "watch" && !state.watching ? `${seatName(view, t.to_move)} to move (paused)` : `${seatName(view, t.to_move)} is thinking…`;
  $("status").textContent = `Deal ${t.deal}, turn ${t.turn + 1} · ${text}`;
}

// the next agent move, unless the game is over or a deal's summary waits for Next deal
function schedule(view, pending) {
  stopTimer();
  if (view.over || !view.agent_to_move || pending) return;
  if (view.mode === "play") state.timer = setTimeout(advance, AGENT_DELAY);
  if (view.mode === "watch" && state.watching) state.timer = setTimeout(advance, Number($("watch-speed").value));
}

async function advance() {
  const view = state.view;
  if (!view || state.busy) return;
  state.busy = true;
  try {
    show(await post(`/api/sessions/${view.session}/advance`, { version: view.version }));
  } catch (e) {
    if (e.status === 409) {
      // an outdated table (another request moved first): take the current one and go on
      try {
        state.busy = false;
        show(await api(`/api/sessions/${view.session}`));
        return;
      } catch (e2) {
        e = e2;
      }
    }
    showError(e.message);
    state.watching = false;
    updateWatchButton();
  } finally {
    state.busy = false;
  }
}

async function move(action) {
  const view = state.view;
  if (!view || state.busy) return;
  state.busy = true;
  try {
    const next = await post(`/api/sessions/${view.session}/move`, { action, version: view.version });
    state.selected.clear();
    showError("");
    show(next);
  } catch (e) {
    showError(e.message);
    try {
      show(await api(`/api/sessions/${view.session}`)); // the game goes on: fetch the table again
    } catch (e2) {
      /* the session is gone: the error says so */
    }
  } finally {
    state.busy = false;
  }
}

function showSummary(view) {
  const s = view.summary;
  const names = view.table.players.map((p, i) => seatName(view, i));
  let title = `Deal ${s.deal} over: ${s.went_out === null ? "" : `${names[s.went_out]} `}${s.outcome_text}`;
  if (s.game_over) title += `. ${names[s.winner]} won the game!`;
  $("summary-title").textContent = title;
  const body = $("summary-table").tBodies[0];
  body.replaceChildren(
    ...names.map((name, i) =>
      el("tr", {}, el("td", { text: name }), el("td", { text: s.deal_points[i] }), el("td", { text: s.totals[i] }))
    )
  );
  $("summary-total-head").textContent = view.episode === "game" ? "game total" : "total";
  $("summary-note").textContent = view.over ? "" : "Below: the table as the deal ended, every hand shown.";
  $("summary-next").hidden = view.over;
  $("summary-close").hidden = !view.over; // while a game goes on, Next deal acknowledges it
  $("summary").hidden = false;
}

function closeSummary() {
  $("summary").hidden = true;
  if (state.view && state.view.summary) state.seenSummary = state.view.summary.deal;
  if (state.view) show(state.view);
}

// ------------------------------------------------------------------ the table
function renderTable(table, opts) {
  $("table").hidden = false;
  if (state.hint !== hintKey()) hideHint(); // a hint belongs to one position
  const legal = opts.legal;
  const mine = opts.mine;
  const names = table.players.map((p, i) => (mine === i ? "you" : `P${i} ${p.name}`));

  // opponents: hand sizes and publicly known cards
  const opponents = $("opponents");
  opponents.replaceChildren();
  for (const p of table.players) {
    if (p.seat === mine) continue;
    const box = el("div", { class: `opponent${table.to_move === p.seat ? " to-move" : ""}`, "data-seat": p.seat });
    box.append(el("div", { class: "name", text: names[p.seat] + (table.dealer === p.seat ? " (dealer)" : "") }));
    box.append(el("div", { class: "size", text: `${p.hand_size} cards · booked ${p.points} · total ${p.total}` }));
    if (p.hand) {
      box.append(el("div", { class: "cards small" }, ...sortCards(p.hand).map((c) => cardEl(c, { class: p.known.includes(c) ? "known" : "" }))));
    } else {
      const backs = el("div", { class: "cards small" });
      for (const c of p.known) backs.append(cardEl(c, { class: "known", title: "taken from the staircase" }));
      for (let i = p.known.length; i < p.hand_size; i++) backs.append(el("span", { class: "card back" }));
      box.append(backs);
    }
    opponents.append(box);
  }

  // stock
  $("stock-size").textContent = table.stock_size;
  const stock = $("stock");
  const canDraw = legal && legal.draw !== null;
  stock.classList.toggle("legal", canDraw);
  stock.onclick = canDraw ? () => move(legal.draw) : null;

  // staircase: bottom card first, each step indented; click depth d to take the top d cards
  const stairs = $("staircase");
  stairs.replaceChildren();
  const depth = table.staircase.length;
  table.staircase.forEach((card, i) => {
    const d = depth - i;
    const action = legal ? legal.take[d] : undefined;
    const c = cardEl(card, { "data-depth": d, title: `take ${d}`, class: action !== undefined ? "legal" : "" });
    if (action !== undefined) {
      c.onclick = () => move(action);
      c.onmouseenter = () => stairs.querySelectorAll(".card").forEach((x) => x.classList.toggle("taking", Number(x.dataset.depth) <= d));
      c.onmouseleave = () => stairs.querySelectorAll(".card").forEach((x) => x.classList.remove("taking"));
    }
    c.append(el("span", { class: "depth", text: d }));
    stairs.append(el("div", { class: "step", style: `margin-left:${i * 18}px` }, c));
  });
  if (!depth) stairs.append(el("div", { class: "empty", text: "empty" }));
  $("take-hint").hidden = mine === null;

  // melds with owners; lay-off targets for the one selected card
  const melds = $("melds");
  melds.replaceChildren();
  const one = state.selected.size === 1 ? [...state.selected][0] : null;
  table.melds.forEach((m, i) => {
    const offers = legal && one ? legal.layoffs.filter((l) => l.meld === i && l.card === one) : [];
    const end = (which) => {
      const offer = offers.find((l) => l.end === which);
      return offer ? el("button", { class: "layoff legal", "data-layoff": offer.action, title: `lay off ${one}`, text: `+${one}`, onclick: () => move(offer.action) }) : null;
    };
    const row = el("div", { class: "meld", "data-meld": i });
    row.append(el("span", { class: "owner", text: `${names[m.owner]} · ${m.kind}` }));
    row.append(el("div", { class: "meld-cards" }, ...[end("low"), ...m.cards.map((c) => cardEl(c)), end("high"), end("set")]));
    melds.append(row);
  });
  if (!table.melds.length) melds.append(el("div", { class: "empty", text: "no melds yet" }));

  // my hand (play) or every hand (watch, replay)
  const hand = $("hand");
  hand.replaceChildren();
  $("hand-header").hidden = mine === null;
  $("actions").hidden = mine === null;
  if (mine !== null) {
    const me = table.players[mine];
    for (const card of sortCards(me.hand)) {
      const selected = state.selected.has(card);
      const c = cardEl(card, { class: `${selected ? "selected" : ""} ${me.known.includes(card) ? "known" : ""}`, "data-discard": legal && legal.discards[card] !== undefined ? legal.discards[card] : null });
      if (legal && legal.draw === null && Object.keys(legal.take).length === 0) {
        c.classList.add("selectable");
        c.onclick = () => {
          state.selected.has(card) ? state.selected.delete(card) : state.selected.add(card);
          renderTable(table, opts);
        };
        if (legal.discards[card] !== undefined) c.ondblclick = () => move(legal.discards[card]);
      }
      hand.append(c);
    }
    renderActions(legal);
  }

  // scores and log
  const body = $("scores").tBodies[0];
  body.replaceChildren(
    ...table.players.map((p) =>
      el(
        "tr",
        { class: table.to_move === p.seat ? "to-move" : "" },
        el("td", { text: `P${p.seat}${table.dealer === p.seat ? " D" : ""}` }),
        el("td", { text: mine === p.seat ? "you" : p.name }),
        el("td", { text: p.hand_size }),
        el("td", { text: p.points }),
        el("td", { text: p.total })
      )
    )
  );
  $("log").replaceChildren(...opts.log.slice(-14).map((line) => el("li", { text: line.text, value: line.n })));
}

function renderActions(legal) {
  const meldButton = $("meld-button");
  const discardButton = $("discard-button");
  const chosen = [...state.selected].sort().join(" ");
  const meld = legal ? legal.melds.find((m) => [...m.cards].sort().join(" ") === chosen) : undefined;
  meldButton.disabled = !meld;
  meldButton.textContent = meld ? `Meld ${meld.cards.join(" ")}` : "Meld";
  meldButton.onclick = meld ? () => move(meld.action) : null;
  const one = state.selected.size === 1 ? [...state.selected][0] : null;
  const discard = legal && one ? legal.discards[one] : undefined;
  discardButton.disabled = discard === undefined;
  discardButton.textContent = discard !== undefined ? `Discard ${one}` : "Discard";
  discardButton.onclick = discard !== undefined ? () => move(discard) : null;
  $("hint-button").disabled = !legal;
  let hint = "";
  if (legal && legal.draw === null && Object.keys(legal.take).length === 0) {
    hint = "Click cards to select them: a legal meld enables Meld; one card enables Discard (or double-click it) and shows where it can be laid off.";
    if (one && legal.layoffs.some((l) => l.card === one)) hint = `Click a +${one} at a meld to lay it off.`;
  }
  $("hint").textContent = hint;
}

// ------------------------------------------------------------------ watch controls
function updateWatchButton() {
  $("watch-play").textContent = state.watching ? "Pause" : "Play";
  if (state.view) renderStatus(state.view);
}

// ------------------------------------------------------------------ replay
async function loadReplay(deal) {
  const r = state.replay;
  try {
    r.data = await api(`/api/replay?deal=${deal}`, { method: "POST", headers: { "Content-Type": "application/octet-stream" }, body: r.content });
    showError("");
  } catch (e) {
    if (deal === 1) {
      // a file that does not load: nothing of the previous one stays on screen
      state.replay = null;
      $("table").hidden = true;
      $("replay-deal").replaceChildren();
      $("replay-label").textContent = "";
    }
    showError(e.message);
    return;
  }
  const select = $("replay-deal");
  select.replaceChildren(
    ...r.data.deals.map((d) => el("option", { value: d.deal, text: `${d.deal}: ${d.agents.join(" vs ")} — ${d.outcome_text}, ${d.deal_points.join(" / ")}` }))
  );
  if (r.data.count > r.data.deals.length) {
    select.append(el("option", { disabled: true, text: `… ${r.data.count - r.data.deals.length} more deals (the first ${r.data.deals.length} are listed)` }));
  }
  select.value = String(deal);
  const slider = $("replay-slider");
  slider.max = r.data.frames.length - 1;
  slider.value = 0;
  showFrame();
}

function showFrame() {
  const r = state.replay;
  if (!r || !r.data) return;
  const i = Number($("replay-slider").value);
  const frames = r.data.frames;
  const frame = frames[i];
  const log = frames.slice(1, i + 1).map((f, k) => ({ n: k + 1, text: `P${f.move.seat} ${r.data.record.agents[f.move.seat]}: ${f.move.move}` }));
  renderTable(frame.table, { legal: null, log: log.slice(-14), mine: null });
  $("download-record").hidden = true; // a watched game's link, not this file's
  $("replay-label").textContent = i === 0 ? `dealt (${frames.length - 1} moves)` : `move ${i} of ${frames.length - 1}: P${frame.move.seat} ${frame.move.move}`;
  $("replay-hint").disabled = i === frames.length - 1; // the deal is over: nothing to choose
  $("status").textContent = i === frames.length - 1 ? `Deal over: ${r.data.outcome_text}, points ${r.data.record.deal_points.join(" / ")}` : `Deal ${frame.table.deal}, turn ${frame.table.turn + 1}`;
}

// ------------------------------------------------------------------ hints
// The moves of the shown position ranked by a short search on the server (the person's own
// position in play, the shown one in a replay): win rate and point margin, the best first.
function hintKey() {
  if (state.tab === "replay") return state.replay && state.replay.data ? `replay:${state.replay.data.deal}:${$("replay-slider").value}` : null;
  return state.view ? `play:${state.view.session}:${state.view.version}` : null;
}

async function hint() {
  const key = hintKey();
  if (!key) return;
  try {
    let data;
    if (state.tab === "replay") {
      const step = Number($("replay-slider").value) + 1; // the position before move step
      const body = JSON.stringify(state.replay.data.record); // the shown deal only, not the whole file
      data = await api(`/api/replay/hint?step=${step}`, { method: "POST", headers: { "Content-Type": "application/octet-stream" }, body });
    } else {
      data = await post(`/api/sessions/${state.view.session}/hint`, { version: state.view.version });
    }
    showError("");
    if (hintKey() === key) showHint(data, key); // else the table moved on meanwhile
  } catch (e) {
    showError(e.message);
  }
}

function percent(x) {
  return x === null ? "–" : `${(100 * x).toFixed(0)}%`;
}

function showHint(data, key) {
  const played = data.played ? data.played.action : null;
  const rows = data.estimates.map((e, i) => {
    const win = e.win_se === null ? percent(e.win_rate) : `${percent(e.win_rate)} ± ${percent(e.win_se)}`;
    const margin = e.margin === null ? "–" : `${e.margin > 0 ? "+" : ""}${e.margin.toFixed(1)}`;
    const tr = el("tr", { class: `${i === 0 ? "best" : ""} ${e.action === played ? "played" : ""}`, "data-action": e.action, title: `${e.playouts} playouts${e.greedy ? ", the greedy heuristic's move" : ""}` });
    tr.append(el("td", { text: e.text }), el("td", { text: win }), el("td", { text: margin }));
    return tr;
  });
  $("hint-table").tBodies[0].replaceChildren(...rows);
  $("hint-agent").textContent = data.agent;
  let note = "Win rate: the share of simulated deals won (a tie counts half); margin: points ahead of the others' mean at the deal's end.";
  if (data.estimates.length === 1) note = "Only one move is worth searching here.";
  if (data.played && !data.estimates.some((e) => e.action === played)) note += ` Played: ${data.played.move} (not searched).`;
  const search = data.search;
  $("hint-cut").hidden = !(search && search.cut_short);
  if (search && search.cut_short) $("hint-cut").textContent = `Cut short: the server is busy, so this hint searched ${search.playouts}${search.budget ? ` of ${search.budget}` : ""} playouts; its figures are rougher.`;
  $("hint-note").textContent = note;
  // beliefs: per opponent the cards it most likely holds, from what it was seen to do
  const seats = (data.beliefs || []).map((b) => el("li", {
    text: `P+${b.seat}: ` + b.cards.map((c) => `${c.card} ${percent(c.p)}`).join(", ") + ` (uniform deal: ${percent(b.uniform)} each)`,
  }));
  $("hint-beliefs").replaceChildren(...seats);
  $("hint-panel").hidden = false;
  state.hint = key;
}

function hideHint() {
  $("hint-panel").hidden = true;
  state.hint = null;
}

// ------------------------------------------------------------------ wiring
async function main() {
  document.querySelectorAll(".tab").forEach((b) => b.addEventListener("click", () => selectTab(b.dataset.tab)));
  $("num-players").addEventListener("change", buildSeatChoices);
  $("start").addEventListener("click", start);
  $("sort-suit").addEventListener("click", () => setSort("suit"));
  $("sort-rank").addEventListener("click", () => setSort("rank"));
  $("summary-next").addEventListener("click", closeSummary);
  $("summary-close").addEventListener("click", () => ($("summary").hidden = true));
  $("summary-new").addEventListener("click", start);
  $("your-seat").addEventListener("change", buildSeatChoices);
  $("setup-toggle").addEventListener("click", () => {
    const open = document.body.dataset.setupOpen === undefined;
    if (open) document.body.dataset.setupOpen = "1";
    else delete document.body.dataset.setupOpen;
    $("setup-toggle").setAttribute("aria-expanded", String(open));
  });
  window.addEventListener("pagehide", () => endSession(state.view));
  $("watch-play").addEventListener("click", () => {
    state.watching = !state.watching;
    updateWatchButton();
    if (state.view) schedule(state.view, summaryPending(state.view));
  });
  $("watch-step").addEventListener("click", () => {
    state.watching = false;
    updateWatchButton();
    if (state.view && summaryPending(state.view) && !state.view.over) closeSummary(); // the step goes to the next deal
    else advance();
  });
  const speed = $("watch-speed");
  const speedLabel = () => ($("watch-speed-label").textContent = `${speed.value} ms a move`);
  speed.addEventListener("input", speedLabel);
  speedLabel();
  $("replay-file").addEventListener("change", async (event) => {
    const file = event.target.files[0];
    if (!file) return;
    state.replay = { content: await file.arrayBuffer(), data: null };
    loadReplay(1);
  });
  $("replay-deal").addEventListener("change", (e) => loadReplay(Number(e.target.value)));
  $("replay-slider").addEventListener("input", showFrame);
  $("replay-prev").addEventListener("click", () => stepSlider(-1));
  $("replay-next").addEventListener("click", () => stepSlider(1));
  $("hint-button").addEventListener("click", hint);
  $("replay-hint").addEventListener("click", hint);
  try {
    state.config = await api("/api/config");
  } catch (e) {
    showError(`cannot reach the server: ${e.message}`);
    return;
  }
  buildSetup();
  document.body.dataset.ready = "1";
}

function stepSlider(delta) {
  const slider = $("replay-slider");
  slider.value = String(Math.min(Number(slider.max), Math.max(0, Number(slider.value) + delta)));
  showFrame();
}

function setSort(by) {
  state.sortBy = by;
  $("sort-suit").classList.toggle("active", by === "suit");
  $("sort-rank").classList.toggle("active", by === "rank");
  if (state.view) show(state.view);
}

main();
