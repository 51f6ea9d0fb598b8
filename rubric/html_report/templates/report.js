"use strict";
// The report's only script: paged, sortable tables over JSON held in the page, and the pair browser.
// No request leaves the page; every datum is in a <script type="application/json"> element.
(function () {
  const PAGE = Number(document.body.dataset.pageSize) || 15;

  function data(id) { return JSON.parse(document.getElementById(id).textContent); }

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v; else if (k === "text") e.textContent = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v); else e.setAttribute(k, v);
    }
    for (const k of kids) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : String(k));
    return e;
  }

  function fmt(x, d) { return x === null || x === undefined ? "n/a" : Number(x).toFixed(d); }

  // a long text cut at a word boundary near n characters, whole in the cell's tooltip
  function short(text, n) {
    text = String(text ?? "");
    if (text.length <= n) return text;
    const cut = text.slice(0, n), space = cut.lastIndexOf(" ");
    return (space > n / 2 ? cut.slice(0, space) : cut) + "…";
  }
  function shortCell(text, n) { return el("span", {title: String(text ?? "")}, short(text, n)); }

  function compare(a, b) {
    if (a === b) return 0;
    if (a === null || a === undefined) return 1;
    if (b === null || b === undefined) return -1;
    return typeof a === "number" && typeof b === "number" ? a - b : String(a).localeCompare(String(b));
  }

  // columns: [{label, value(row) -> sortable value, cell(row) -> node/text, num}]
  function pagedTable(host, columns, rows, opts) {
    opts = opts || {};
    let page = 0, sortBy = -1, dir = 1, shown = rows, query = "";
    const info = el("span", {class: "count"});
    const search = opts.search ? el("input", {type: "search", placeholder: opts.placeholder || "filter rows", oninput: (e) => {
      query = e.target.value.toLowerCase(); page = 0; draw(); }}) : null;
    const table = el("table", {class: "paged-table"});
    const prev = el("button", {type: "button", onclick: () => { page = Math.max(page - 1, 0); draw(); }}, "‹ prev");
    const next = el("button", {type: "button", onclick: () => { page += 1; draw(); }}, "next ›");
    const where = el("span", {class: "where"});
    host.replaceChildren(el("div", {class: "toolbar"}, search, info), table, el("div", {class: "pager"}, prev, where, next));

    function draw() {
      shown = rows.filter((r) => !query || columns.some((c) => String(c.value(r) ?? "").toLowerCase().includes(query)));
      if (sortBy >= 0) {
        const c = columns[sortBy];
        shown = shown.slice().sort((a, b) => dir * compare(c.value(a), c.value(b)));
      }
      const pages = Math.max(Math.ceil(shown.length / PAGE), 1);
      page = Math.min(page, pages - 1);
      const head = el("tr", {}, ...columns.map((c, i) => el("th", {
        class: "sortable" + (c.num ? " n" : ""), title: "sort", onclick: () => {
          dir = sortBy === i ? -dir : 1; sortBy = i; draw(); }}, c.label)));
      const body = shown.slice(page * PAGE, (page + 1) * PAGE).map((r) => {
        const tr = el("tr", {class: opts.onPick ? "pick" : ""},
          ...columns.map((c) => el("td", {class: c.num ? "n" : ""}, c.cell ? c.cell(r) : (c.value(r) ?? "n/a"))));
        if (opts.onPick) tr.addEventListener("click", () => {
          table.querySelectorAll("tr.current").forEach((x) => x.classList.remove("current"));
          tr.classList.add("current"); opts.onPick(r); });
        return tr;
      });
      table.replaceChildren(el("thead", {}, head), el("tbody", {}, ...body));
      info.textContent = `${shown.length} of ${rows.length} rows`;
      where.textContent = `page ${page + 1} of ${pages}`;
      prev.disabled = page === 0; next.disabled = page >= pages - 1;
      host.dataset.rows = String(shown.length); host.dataset.page = String(page + 1);
      host.classList.add("ready");
    }
    draw();
    return {setRows(r) { rows = r; page = 0; draw(); }, first() { return shown[0]; }};
  }

  function rejectsTable(host) {
    const d = data(host.dataset.src);
    const keys = ["row", "pair_id", "field", "reason", "source_file"];
    pagedTable(host, keys.map((k) => ({label: k, value: (r) => r[k], num: k === "row"})), d, {search: true});
  }

  function answersTable(host, d) {
    const cols = d.answers.columns.map((name, i) => ({label: name, value: (r) => r[i], num: i > 0,
      cell: i > 1 ? (r) => fmt(r[i], 2) : null}));
    cols.push({label: "answer (start)", value: (r) => (d.texts[r[0]] || "").slice(0, 90)});
    const detail = host.parentElement.querySelector(".answer-detail");
    pagedTable(host, cols, d.answers.rows, {search: true, onPick: (r) => {
      detail.replaceChildren(el("h4", {}, `${r[0]} · ${r[1]} words`),
        el("div", {class: "note"}, d.answers.columns.slice(2).map((name, i) => `${name} ${fmt(r[i + 2], 2)}`).join(" · ")),
        el("div", {class: "answer"}, el("div", {class: "text"}, d.texts[r[0]] ?? "")));
      detail.dataset.answer = r[0];
    }});
  }

  function decided(label) { return label === "a" || label === "b"; }

  function pairBrowser(root) {
    const d = data(root.dataset.src);
    const rows = d.pairs.map((p) => {
      const judges = p.j || {};
      const mistake = !!(p.m && p.m.pred && decided(p.label) && p.m.pred !== p.label);
      const disagree = decided(p.label) && Object.values(judges).some((v) => v.deb && v.deb !== p.label);
      return Object.assign({mistake, disagree}, p);
    });
    const columns = [
      {label: "question", value: (r) => d.questions[r.qid] ?? "", cell: (r) => shortCell(d.questions[r.qid], 70)},
      {label: "pair", value: (r) => r.id, cell: (r) => shortCell(r.id, 14)}, {label: "split", value: (r) => r.split},
      {label: "people", value: (r) => r.label},
      {label: "model P(a)", value: (r) => (r.m ? r.m.p_a : null), num: true, cell: (r) => fmt(r.m && r.m.p_a, 3)},
      {label: "model", value: (r) => (r.m ? r.m.pred : null),
       cell: (r) => badge(r.m ? r.m.pred : null, r.label)},
      ...d.judges.map((j) => ({label: j, value: (r) => (r.j && r.j[j] ? r.j[j].deb : null),
                               cell: (r) => badge(r.j && r.j[j] ? r.j[j].deb : null, r.label)})),
      {label: "words a", value: (r) => r.wa, num: true}, {label: "words b", value: (r) => r.wb, num: true},
    ];
    const detail = root.querySelector(".pair-detail");
    const list = pagedTable(root.querySelector(".pair-list"), columns, rows,
      {search: true, placeholder: "search questions, ids, labels", onPick: (r) => show(r)});
    const filter = root.querySelector("select.pair-filter");
    const split = root.querySelector("select.split-filter");
    function apply() {
      const f = filter.value, s = split.value;
      list.setRows(rows.filter((r) => (f === "all" || (f === "mistakes" ? r.mistake : r.disagree))
                                 && (s === "all" || r.split === s)));
      const first = list.first();
      if (first) show(first); else detail.replaceChildren(el("p", {class: "note"}, "No pair matches."));
    }
    filter.addEventListener("change", apply); split.addEventListener("change", apply);

    function badge(dec, label) {
      if (!dec) return el("span", {class: "badge"}, "n/a");
      const cls = decided(label) ? (dec === label ? "badge ok" : "badge bad") : "badge";
      return el("span", {class: cls}, dec);
    }

    function answer(r, side) {
      const id = side === "a" ? r.a : r.b, vec = side === "a" ? r.ra : r.rb;
      const words = side === "a" ? r.wa : r.wb;
      const table = el("table", {class: "rubric-vector"},
        el("tr", {}, ...d.rubrics.map((x) => el("th", {}, x))), el("tr", {}, ...vec.map((v) => el("td", {class: "n"}, fmt(v, 2)))));
      return el("div", {class: "answer" + (r.label === side ? " preferred" : ""), "data-side": side},
        el("h4", {}, `Answer ${side}`, " ", r.label === side ? el("span", {class: "badge ok"}, "people preferred") : null),
        el("div", {class: "note"}, `${id} · ${words} words`), table,
        el("div", {class: "text"}, d.texts[id] ?? "(text not in this output)"));
    }

    function contributions(m) {
      const vals = m.contrib.map((c) => c ?? 0);
      const scale = Math.max(...vals.map(Math.abs), Math.abs(m.icpt || 0), 1e-9);
      const rows = d.contrib.map((name, i) => {
        const v = vals[i], w = `${(100 * Math.abs(v)) / scale}%`;
        const bar = el("span", {class: "bar " + (v >= 0 ? "pos" : "neg"), style: `width:${w}`});
        return el("tr", {class: "contrib", "data-column": name}, el("td", {}, name),
          el("td", {class: "barcell"}, el("div", {class: "barwrap"},
            el("span", {class: "left"}, v < 0 ? bar : ""), el("span", {}, v >= 0 ? bar : ""))),
          el("td", {class: "n"}, (v >= 0 ? "+" : "") + v.toFixed(3)));
      });
      return el("table", {class: "contributions"}, el("tr", {}, el("th", {}, "column"),
        el("th", {}, "← favours b · favours a →"), el("th", {class: "n"}, "logit")), ...rows,
        el("tr", {}, el("td", {}, "intercept"), el("td", {}), el("td", {class: "n"}, fmt(m.icpt, 3))));
    }

    function verdicts(r) {
      if (!d.judges.length) return el("p", {class: "note"}, "No judge output among the inputs.");
      const cell = (v) => (v ? `${v[0] ?? "n/a"} (P(a) ${fmt(v[1], 3)})${v[2] ? " error: " + v[2] : ""}` : "n/a");
      return el("table", {class: "verdicts"},
        el("tr", {}, el("th", {}, "judge"), el("th", {}, "shown a first (ab)"), el("th", {}, "shown b first (ba)"),
          el("th", {}, "order-debiased")),
        ...d.judges.map((j) => { const v = (r.j || {})[j] || {};
          return el("tr", {}, el("td", {}, j), el("td", {}, cell(v.ab)), el("td", {}, cell(v.ba)),
            el("td", {}, badge(v.deb, r.label))); }));
    }

    function show(r) {
      const m = r.m;
      const model = m ? el("div", {class: "model"},
        el("p", {}, "Model: P(a) = ", el("b", {}, fmt(m.p_a, 3)),
          m.p_sc !== null && m.p_sc !== undefined ? ` · style-controlled P(a) = ${fmt(m.p_sc, 3)}` : "",
          " · predicted ", badge(m.pred, r.label), m.err ? ` · ${m.err}` : ""),
        m.contrib.length ? contributions(m) : null)
        : el("p", {class: "note"}, "No model for this output (fit one: lfqa-rubric fit).");
      detail.replaceChildren(
        el("h4", {}, `${r.id} · ${r.split} split · people: `, r.label ?? "unlabeled"),
        el("p", {class: "question"}, d.questions[r.qid] ?? ""),
        el("div", {class: "cols"}, answer(r, "a"), answer(r, "b")),
        el("div", {class: "cols"}, el("div", {}, el("h4", {}, "Rubric model"), model),
          el("div", {}, el("h4", {}, "Judges, both orders"), verdicts(r))));
      detail.dataset.pair = r.id;
    }
    apply();
    const answers = root.parentElement.querySelector(".answers-table");
    if (answers) answersTable(answers, d);
  }

  document.querySelectorAll(".rejects-table").forEach(rejectsTable);
  document.querySelectorAll(".pair-browser").forEach(pairBrowser);
  document.body.dataset.ready = "1";
})();
