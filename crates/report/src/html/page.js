'use strict';
// The page's script: inflates the index, draws the task table (sortable, filterable, paged),
// and on demand inflates one chunk of trial details to draw a trial: its timeline to scale,
// review, cleanup and the tail of its output. All text reaches the page through text nodes
// (never HTML), so nothing in the records can inject markup.
(function () {
  const $ = (sel, root) => (root || document).querySelector(sel);
  const $$ = (sel, root) => Array.from((root || document).querySelectorAll(sel));
  const SVGNS = (() => {
    const t = document.createElement('template');
    t.innerHTML = '<svg></svg>';
    return t.content.firstChild.namespaceURI;
  })();

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    setAttrs(e, attrs);
    for (const kid of kids.flat(Infinity)) {
      if (kid === null || kid === undefined || kid === false) continue;
      e.append(kid instanceof Node ? kid : String(kid));
    }
    return e;
  }
  function svg(tag, attrs, ...kids) {
    const e = document.createElementNS(SVGNS, tag);
    setAttrs(e, attrs);
    for (const kid of kids.flat(Infinity)) {
      if (kid === null || kid === undefined || kid === false) continue;
      e.append(kid instanceof Node ? kid : String(kid));
    }
    return e;
  }
  function setAttrs(e, attrs) {
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else if (k === 'class') e.setAttribute('class', v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
  }

  // Formatting.
  const nf = new Intl.NumberFormat('en');
  const dash = '—';
  function ms(v) {
    if (v === null || v === undefined) return dash;
    if (v < 1000) return v + ' ms';
    const s = v / 1000;
    if (s < 60) return s.toFixed(s < 10 ? 2 : 1) + ' s';
    const m = Math.floor(s / 60);
    if (m < 60) return m + ' min ' + Math.round(s - m * 60) + ' s';
    return Math.floor(m / 60) + ' h ' + (m % 60) + ' min';
  }
  const rate = (v) => (v === null || v === undefined ? dash : v.toFixed(2));
  const int = (v) => (v === null || v === undefined ? dash : nf.format(v));
  const usd = (v) => (v === null || v === undefined ? dash : '$' + v.toFixed(v < 1 ? 4 : 2));
  const SYMBOL = { passed: '✓', failed: '✗', partial: '◐', error: '!', not_run: '–', skipped: '–' };
  const LABEL = { not_run: 'not run' };
  function badge(status) {
    const s = String(status || 'unknown');
    const cls = SYMBOL[s] ? s : 'unknown';
    return el('span', { class: 'badge s-' + cls }, (SYMBOL[s] || '?') + ' ' + (LABEL[s] || s));
  }
  function kmax(map) {
    let best = null;
    for (const k of Object.keys(map || {})) {
      const n = Number(k);
      if (Number.isFinite(n) && (best === null || n > best)) best = n;
    }
    return best;
  }
  const atK = (map) => {
    const k = kmax(map);
    return k === null ? null : { k, v: map[String(k)] };
  };
  const STATUS_ORDER = { failed: 0, partial: 1, error: 2, not_run: 3, passed: 4 };

  // Data.
  function bytes(b64) {
    const bin = atob(b64.trim());
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }
  async function inflate(id) {
    const node = document.getElementById(id);
    if (!node) throw new Error('the page has no data block ' + id);
    const stream = new Blob([bytes(node.textContent)]).stream().pipeThrough(new DecompressionStream('gzip'));
    return JSON.parse(await new Response(stream).text());
  }
  const chunks = new Map();
  function trial(g) {
    const c = Math.floor(g / S.index.chunk);
    if (!chunks.has(c)) chunks.set(c, inflate('hyoka-c' + c));
    return chunks.get(c).then((list) => expand(list[g % S.index.chunk]));
  }
  // Events arrive as [dt, code, tool, path, input, detail] without trailing nulls; the page
  // works on [t, type, tool, path, input, detail].
  const CODES = { t: 'turn', c: 'tool_call', '+': 'file_created', '~': 'file_changed', '-': 'file_deleted', L: 'limit_reached', S: 'signal', X: 'exit', P: 'phase', r: 'tool_result', u: 'usage' };
  function expand(d) {
    if (d.expanded) return d;
    let t = 0;
    d.events = d.events.map((e) => {
      t += e[0];
      return [t, CODES[e[1]] || e[1], e[2] ?? null, e[3] ?? null, e[4] ?? null, e[5] ?? null];
    });
    d.expanded = true;
    return d;
  }

  const S = { index: null, compare: false, sort: { key: null, dir: 1 }, page: 0, size: 50, rows: [], current: null, trialShown: null };

  // Columns of the run table and of the comparison.
  function runColumns(run) {
    const agents = run.tasks.some((t) => t.agent);
    const cols = [
      { key: 'id', label: 'Task', text: true, get: (t) => t.id },
      agents && { key: 'agent', label: 'Agent', text: true, get: (t) => t.agent || '', show: (t) => t.agent || dash },
      { key: 'status', label: 'Status', get: (t) => STATUS_ORDER[t.status] ?? 5, show: (t) => badge(t.status) },
      { key: 'trials', label: 'Trials', num: true, get: (t) => t.trials, show: trialsText },
      { key: 'p1', label: 'pass@1', num: true, get: (t) => t.pass_at_k['1'] ?? -1, show: (t) => rate(t.pass_at_k['1']) },
      { key: 'pk', label: 'pass@k', num: true, get: (t) => (atK(t.pass_at_k) || { v: -1 }).v, show: (t) => kText(t.pass_at_k) },
      { key: 'hk', label: 'pass^k', num: true, get: (t) => (atK(t.pass_hat_k) || { v: -1 }).v, show: (t) => kText(t.pass_hat_k) },
      { key: 'score', label: 'Mean score', num: true, get: (t) => t.mean_score ?? -1, show: (t) => rate(t.mean_score) },
      { key: 'tokens', label: 'Tokens', num: true, get: (t) => t.tokens ?? -1, show: (t) => int(t.tokens) },
      { key: 'cost', label: 'Cost', num: true, get: (t) => t.cost_usd ?? -1, show: (t) => usd(t.cost_usd) },
      { key: 'time', label: 'Time (sum)', num: true, get: (t) => t.time_ms, show: (t) => ms(t.time_ms) },
      { key: 'term', label: 'Termination', text: true, get: (t) => t.terminations.join(', '), show: (t) => t.terminations.join(', ') || dash },
    ];
    return cols.filter(Boolean);
  }
  function trialsText(t) {
    const parts = [t.passed + '/' + t.counted + ' passed'];
    if (t.errors) parts.push(t.errors + ' error' + (t.errors > 1 ? 's' : ''));
    if (t.not_run) parts.push(t.not_run + ' not run');
    return parts.join(', ');
  }
  function kText(map) {
    const a = atK(map);
    return a ? rate(a.v) + ' (k=' + a.k + ')' : dash;
  }
  function compareColumns() {
    const [A, B] = S.index.runs;
    const ta = (r) => (r.a === null ? null : A.tasks[r.a]);
    const tb = (r) => (r.b === null ? null : B.tasks[r.b]);
    const agents = S.index.compare.some((r) => r.agent);
    const side = (t, f) => (t ? f(t) : el('span', { class: 'muted' }, 'did not run'));
    const cols = [
      { key: 'id', label: 'Task', text: true, get: (r) => r.id },
      agents && { key: 'agent', label: 'Agent', text: true, get: (r) => r.agent || '', show: (r) => r.agent || dash },
      { key: 'flip', label: 'Change', get: (r) => (r.flip === 'broken' ? 0 : r.flip === 'fixed' ? 1 : 2), show: flipCell },
      { key: 'sa', label: 'A status', get: (r) => (ta(r) ? STATUS_ORDER[ta(r).status] ?? 5 : 6), show: (r) => side(ta(r), (t) => badge(t.status)) },
      { key: 'ra', label: 'A pass@1', num: true, get: (r) => r.rate_a ?? -1, show: (r) => rate(r.rate_a) },
      { key: 'sb', label: 'B status', get: (r) => (tb(r) ? STATUS_ORDER[tb(r).status] ?? 5 : 6), show: (r) => side(tb(r), (t) => badge(t.status)) },
      { key: 'rb', label: 'B pass@1', num: true, get: (r) => r.rate_b ?? -1, show: (r) => rate(r.rate_b) },
      { key: 'delta', label: 'Δ pass@1', num: true, get: (r) => r.delta ?? -9, show: (r) => (r.delta === null ? dash : (r.delta > 0 ? '+' : '') + r.delta.toFixed(2)) },
      { key: 'timea', label: 'A time', num: true, get: (r) => (ta(r) ? ta(r).time_ms : -1), show: (r) => (ta(r) ? ms(ta(r).time_ms) : dash) },
      { key: 'timeb', label: 'B time', num: true, get: (r) => (tb(r) ? tb(r).time_ms : -1), show: (r) => (tb(r) ? ms(tb(r).time_ms) : dash) },
      { key: 'costa', label: 'A cost', num: true, get: (r) => (ta(r) ? ta(r).cost_usd ?? -1 : -1), show: (r) => usd(ta(r) && ta(r).cost_usd) },
      { key: 'costb', label: 'B cost', num: true, get: (r) => (tb(r) ? tb(r).cost_usd ?? -1 : -1), show: (r) => usd(tb(r) && tb(r).cost_usd) },
    ];
    return cols.filter(Boolean);
  }
  function flipCell(r) {
    if (r.flip === 'fixed') return el('span', { class: 'flip-fixed' }, '▲ fixed');
    if (r.flip === 'broken') return el('span', { class: 'flip-broken' }, '▼ broken');
    if (r.a === null) return 'only in B';
    if (r.b === null) return 'only in A';
    return el('span', { class: 'muted' }, 'same');
  }

  // The table.
  function items() {
    return S.compare ? S.index.compare : S.index.runs[0].tasks;
  }
  function statusesOf(item) {
    if (!S.compare) return [item.status];
    const [A, B] = S.index.runs;
    return [item.a !== null && A.tasks[item.a].status, item.b !== null && B.tasks[item.b].status].filter(Boolean);
  }
  function termsOf(item) {
    if (!S.compare) return item.terminations;
    const [A, B] = S.index.runs;
    return [].concat(item.a !== null ? A.tasks[item.a].terminations : [], item.b !== null ? B.tasks[item.b].terminations : []);
  }
  function fillFilters() {
    const statuses = new Set();
    const terms = new Set();
    for (const it of items()) {
      statusesOf(it).forEach((s) => statuses.add(s));
      termsOf(it).forEach((t) => terms.add(t));
    }
    const fs = $('#f-status');
    [...statuses].sort((a, b) => (STATUS_ORDER[a] ?? 5) - (STATUS_ORDER[b] ?? 5)).forEach((s) => fs.append(el('option', { value: s }, LABEL[s] || s)));
    const ft = $('#f-term');
    [...terms].sort().forEach((t) => ft.append(el('option', { value: t }, t)));
    if (S.compare) $('#f-flip-label').hidden = false;
  }
  function applyFilters() {
    const status = $('#f-status').value;
    const term = $('#f-term').value;
    const flip = $('#f-flip').value;
    const q = $('#f-q').value.trim().toLowerCase();
    const all = items();
    const rows = [];
    for (let i = 0; i < all.length; i++) {
      const it = all[i];
      if (status && !statusesOf(it).includes(status)) continue;
      if (term && !termsOf(it).includes(term)) continue;
      if (q && !(it.id.toLowerCase().includes(q) || (it.agent || '').toLowerCase().includes(q))) continue;
      if (flip === 'flipped' && !it.flip) continue;
      if ((flip === 'fixed' || flip === 'broken') && it.flip !== flip) continue;
      if (flip === 'same' && (it.flip || it.a === null || it.b === null)) continue;
      rows.push(i);
    }
    const col = S.cols.find((c) => c.key === S.sort.key);
    if (col) {
      const dir = S.sort.dir;
      const key = rows.map((i) => col.get(all[i]));
      const order = rows.map((_, j) => j);
      order.sort((x, y) => {
        const a = key[x];
        const b = key[y];
        const c = col.text ? String(a).localeCompare(String(b), 'en', { numeric: true }) : a - b;
        return c * dir || rows[x] - rows[y];
      });
      S.rows = order.map((j) => rows[j]);
    } else {
      S.rows = rows;
    }
    S.page = 0;
    draw();
  }
  function head() {
    const tr = $('#tasks thead tr');
    tr.replaceChildren(
      ...S.cols.map((c) =>
        el('th', { scope: 'col', class: c.num ? 'num' : null, 'aria-sort': S.sort.key === c.key ? (S.sort.dir > 0 ? 'ascending' : 'descending') : 'none' },
          el('button', { type: 'button', class: 'sort', 'data-key': c.key, onclick: () => sortBy(c.key) }, c.label))));
  }
  function sortBy(key) {
    S.sort = { key, dir: S.sort.key === key ? -S.sort.dir : 1 };
    head();
    applyFilters();
    const b = $('#tasks thead button[data-key="' + key + '"]');
    if (b) b.focus();
  }
  function draw() {
    const all = items();
    const size = S.size || S.rows.length || 1;
    const pages = Math.max(1, Math.ceil(S.rows.length / size));
    S.page = Math.min(S.page, pages - 1);
    const from = S.page * size;
    const slice = S.rows.slice(from, from + size);
    const frag = document.createDocumentFragment();
    for (const i of slice) {
      const it = all[i];
      const tr = el('tr', { 'data-i': i, class: S.current === i ? 'current' : null });
      S.cols.forEach((c, n) => {
        const content = n === 0 ? el('button', { type: 'button', class: it.id.length > 32 ? 'task-link long' : 'task-link', 'data-i': i }, it.id) : c.show ? c.show(it) : c.get(it);
        tr.append(el(n === 0 ? 'th' : 'td', { scope: n === 0 ? 'row' : null, class: c.num ? 'num' : null }, content));
      });
      frag.append(tr);
    }
    $('#tasks tbody').replaceChildren(frag);
    const noun = all.length === 1 ? 'task' : 'tasks';
    $('#count').textContent = S.rows.length === all.length
      ? nf.format(all.length) + ' ' + noun
      : nf.format(S.rows.length) + ' of ' + nf.format(all.length) + ' ' + noun + ' match';
    $('#pager').hidden = pages < 2;
    $('#p-where').textContent = 'page ' + (S.page + 1) + ' of ' + pages;
    $('#p-prev').disabled = S.page === 0;
    $('#p-next').disabled = S.page >= pages - 1;
  }

  // Details of a task.
  function openItem(i, focus) {
    S.current = i;
    $$('#tasks tbody tr.current').forEach((tr) => tr.classList.remove('current'));
    const tr = $('#tasks tbody tr[data-i="' + i + '"]');
    if (tr) tr.classList.add('current');
    const sec = $('#detail');
    const it = items()[i];
    const close = el('button', { type: 'button', class: 'close', onclick: closeItem }, 'Close (Esc)');
    const headBits = [el('h2', { id: 'detail-h' }, 'Task ', el('span', { class: 'mono' }, it.id), it.agent ? ' (agent ' + it.agent + ')' : '')];
    let sides;
    if (S.compare) {
      const [A, B] = S.index.runs;
      headBits.push(flipCell(it));
      sides = el('div', { class: 'pair' },
        el('div', {}, el('h3', {}, 'Run A: ', A.run_id), it.a === null ? el('p', { class: 'muted' }, 'This task did not run in A.') : trialsTable(A.tasks[it.a], 'A')),
        el('div', {}, el('h3', {}, 'Run B: ', B.run_id), it.b === null ? el('p', { class: 'muted' }, 'This task did not run in B.') : trialsTable(B.tasks[it.b], 'B')));
    } else {
      headBits.push(badge(it.status));
      sides = trialsTable(it, '');
    }
    sec.replaceChildren(el('div', { class: 'detail-head' }, headBits, close), sides, el('div', { id: 'trial-view', 'aria-live': 'polite' }));
    sec.hidden = false;
    const first = $('button.show-trial', sec);
    const shown = first ? showTrial(first) : Promise.resolve();
    if (focus) sec.focus();
    history.replaceState(null, '', '#task=' + i);
    return shown;
  }
  function closeItem() {
    const i = S.current;
    $('#detail').hidden = true;
    S.current = null;
    $$('#tasks tbody tr.current').forEach((tr) => tr.classList.remove('current'));
    history.replaceState(null, '', '#');
    const b = $('#tasks tbody button.task-link[data-i="' + i + '"]');
    if (b) b.focus();
  }
  function trialsTable(task, run) {
    // Columns no trial of the task fills are left out.
    const has = (f) => task.rows.some((r) => r[f] !== null && r[f] !== undefined);
    const cols = [
      ['Trial', (r) => el('th', { scope: 'row' }, r.label, r.problems ? el('span', { class: 'problem', title: 'records missing or refused' }, ' ⚠') : null)],
      ['Status', (r) => el('td', {}, badge(r.status))],
      ['Termination', (r) => el('td', {}, r.termination || dash)],
      has('error_kind') && ['Error kind', (r) => el('td', {}, r.error_kind || dash)],
      has('attempts') && ['Attempts', (r) => el('td', { class: 'num' }, r.attempts ?? dash)],
      has('agent') && ['Agent', (r) => el('td', {}, r.agent || dash)],
      ['Time', (r) => el('td', { class: 'num' }, ms(r.time_ms))],
      has('tokens') && ['Tokens', (r) => el('td', { class: 'num' }, int(r.tokens))],
      has('cost_usd') && ['Cost', (r) => el('td', { class: 'num' }, usd(r.cost_usd))],
      has('score') && ['Score', (r) => el('td', { class: 'num' }, rate(r.score))],
      ['', (r) => el('td', {}, el('button', { type: 'button', class: 'show-trial', 'data-g': r.g, 'data-run': run, 'aria-controls': 'trial-view', 'aria-pressed': 'false', onclick: (e) => showTrial(e.currentTarget) }, 'Timeline'))],
    ].filter(Boolean);
    return el('div', { class: 'table-wrap' }, el('table', { class: 'grid trials' },
      el('caption', { class: 'sr-only' }, 'Trials of task ' + task.id + (run ? ' in run ' + run : '')),
      el('thead', {}, el('tr', {}, cols.map(([name]) => el('th', { scope: 'col' }, name || el('span', { class: 'sr-only' }, 'Show')))))
      , el('tbody', {}, task.rows.map((r) => el('tr', {}, cols.map(([, cell]) => cell(r)))))));
  }
  function showTrial(button) {
    $$('#detail button.show-trial').forEach((b) => b.setAttribute('aria-pressed', String(b === button)));
    const g = Number(button.dataset.g);
    const view = $('#trial-view');
    view.replaceChildren(el('p', { class: 'muted' }, 'Loading the trial…'));
    S.trialShown = trial(g).then((d) => {
      view.replaceChildren(...renderTrial(d, button.dataset.run));
      return d;
    }).catch((err) => {
      view.replaceChildren(el('p', { class: 'problem', role: 'alert' }, 'Cannot show this trial: ' + err));
      throw err;
    });
    return S.trialShown;
  }

  // One trial.
  function renderTrial(d, run) {
    const out = [el('h3', {}, 'Trial ' + d.label + ' of ', el('span', { class: 'mono' }, d.task), run ? ' (run ' + run + ')' : '')];
    if (d.problems.length) {
      out.push(el('ul', { class: 'problems', role: 'alert' }, d.problems.map((p) => el('li', {}, p))));
    }
    const facts = [
      ['Status', badge(d.status)],
      ['Termination', d.termination || dash],
      d.error_kind && ['Error kind', d.error_kind],
      ['Exit', d.signal !== null ? 'signal ' + d.signal : d.exit_code !== null ? 'code ' + d.exit_code : dash],
      d.error && ['Error', d.error],
      d.attempts !== null && ['Attempts', String(d.attempts)],
      d.earlier_attempts && ['Earlier attempts', el('span', { class: 'mono' }, d.earlier_attempts)],
      d.agent && ['Agent', d.agent],
      ['Started', d.started_at || dash],
      ['Duration', ms(d.duration_ms)],
      d.command && ['Command', el('code', {}, d.command)],
      d.workspace && ['Workspace', el('code', {}, d.workspace)],
      d.counts.length && ['Counts', d.counts.map(([k, v]) => k + ' ' + v).join(', ')],
      d.limits.length && ['Limits', d.limits.map(([k, v]) => k + ' ' + v).join(', ')],
      d.usage && ['Usage', usageText(d.usage)],
      d.tools.length && ['Tool calls', d.tools.map(([k, v]) => k + ' ×' + v).join(', ')],
    ].filter(Boolean);
    out.push(el('dl', { class: 'facts' }, facts.map(([k, v]) => [el('dt', {}, k), el('dd', {}, v)])));
    out.push(timelineFigure(d));
    out.push(transcriptBlock(d));
    out.push(changesBlock(d.changes));
    out.push(el('h4', {}, 'Review'));
    if (d.review) {
      const r = d.review;
      out.push(el('p', {}, r.pass === true ? badge('passed') : r.pass === false ? badge('failed') : 'no verdict', r.score !== null && r.score !== undefined ? ' score ' + rate(r.score) : ''));
      if (r.notes) out.push(el('p', { class: 'notes' }, r.notes));
    } else {
      out.push(el('p', { class: 'muted' }, 'No review verdict.'));
    }
    if (d.phases.length) {
      out.push(el('details', { open: true }, el('summary', {}, 'Phases'),
        el('table', { class: 'grid' },
          el('thead', {}, el('tr', {}, ['Phase', 'Start', 'Duration', 'Status', 'Exit code', 'Detail'].map((c) => el('th', { scope: 'col' }, c)))),
          el('tbody', {}, d.phases.map((p) => el('tr', {},
            el('th', { scope: 'row' }, p.name), el('td', { class: 'num' }, p.start_ms === null ? dash : '+' + ms(p.start_ms)),
            el('td', { class: 'num' }, ms(p.duration_ms)), el('td', {}, badge(p.status)), el('td', { class: 'num' }, p.exit_code ?? dash), el('td', {}, p.detail || '')))))));
    }
    out.push(eventsBlock(d));
    out.push(el('h4', {}, 'Cleanup'));
    out.push(cleanupBlock(d.cleanup));
    out.push(logBlock('output.log', d.output, true));
    if (d.build_log) out.push(logBlock('build.log', d.build_log, false));
    if (d.review_log) out.push(logBlock('review.log', d.review_log, false));
    for (const [name, tail] of d.service_logs || []) out.push(logBlock('service ' + name + ' (services/' + name + '.log)', tail, false));
    return out;
  }
  // The transcript: the agent's turns in order, each with its tool calls (and their inputs),
  // the results that came back and the spending it reported, from the timeline's events.
  function transcriptBlock(d) {
    const turns = [];
    let current = null;
    const open = (t) => { current = { t, items: [] }; turns.push(current); };
    for (const e of d.events) {
      const [t, type, tool, path, input, detail] = e;
      if (type === 'turn') { open(t); continue; }
      if (!['tool_call', 'tool_result', 'usage'].includes(type)) continue;
      if (!current) open(null);
      if (type === 'tool_call') {
        current.items.push(el('li', { class: 'call' }, el('span', { class: 'muted' }, '+' + ms(t) + ' '), 'tool call ', el('strong', {}, tool || 'unknown'),
          path ? [' ', el('code', {}, path)] : '', input ? el('pre', { class: 'log input' }, input) : ''));
      } else if (type === 'tool_result') {
        current.items.push(el('li', { class: input === 'error' ? 'result problem' : 'result' }, el('span', { class: 'muted' }, '+' + ms(t) + ' '),
          input === 'error' ? 'result (error)' : 'result', detail ? el('pre', { class: 'log' }, detail) : el('span', { class: 'muted' }, ' (no text)')));
      } else {
        current.items.push(el('li', { class: 'usage' }, el('span', { class: 'muted' }, '+' + ms(t) + ' '), 'tokens ' + (detail || '')));
      }
    }
    const body = turns.length
      ? el('ol', { class: 'transcript' }, turns.map((turn, i) => el('li', {},
        el('strong', {}, turn.t === null ? 'Before the first turn' : 'Turn ' + (turns[0].t === null ? i : i + 1)),
        turn.t === null ? '' : el('span', { class: 'muted' }, ' +' + ms(turn.t)),
        turn.items.length ? el('ul', {}, turn.items) : el('span', { class: 'muted' }, ' (no tool calls)'))))
      : el('p', { class: 'muted' }, 'No turns or tool calls were reported (events: none, or the agent reported nothing).');
    const cut = d.events_total > d.events.length ? el('p', { class: 'muted' }, 'Only the first ' + int(d.events.length) + ' of ' + int(d.events_total) + ' events are on this page.') : null;
    return el('details', { open: true, id: 'transcript' }, el('summary', {}, 'Transcript: ' + int(turns.filter((x) => x.t !== null).length) + ' turns'), cut, body);
  }
  // The files the agent changed, each with its diff from the starter or why it has none.
  function changesBlock(c) {
    if (!c) return el('p', { class: 'muted' }, 'No changed files recorded.');
    const cut = c.left_out ? el('p', { class: 'muted' }, int(c.left_out) + ' of ' + int(c.total) + ' changes are not listed (the record keeps the first ' + int(c.files.length) + ').') : null;
    const diffPre = (text) => el('pre', { class: 'log diff' }, text.split('\n').map((line) => el('span', {
      class: line.startsWith('+') && !line.startsWith('+++') ? 'add' : line.startsWith('-') && !line.startsWith('---') ? 'del' : line.startsWith('@@') ? 'hunk' : null,
    }, line + '\n')));
    return el('details', { open: true, id: 'changes' }, el('summary', {}, 'Changed files: ' + int(c.total)), cut,
      el('ul', { class: 'changes' }, c.files.map((f) => el('li', {},
        el('code', {}, f.path), ' ', el('span', { class: 'muted' }, f.change + ', ' + int(f.bytes) + ' bytes'),
        f.diff ? diffPre(f.diff) : el('p', { class: 'muted note' }, f.note || 'no diff')))));
  }
  function usageText(u) {
    const parts = [];
    if (u.input_tokens != null) parts.push(int(u.input_tokens) + ' in');
    if (u.output_tokens != null) parts.push(int(u.output_tokens) + ' out');
    if (u.cache_read_tokens != null) parts.push(int(u.cache_read_tokens) + ' cache read');
    if (u.cache_creation_tokens != null) parts.push(int(u.cache_creation_tokens) + ' cache written');
    if (u.cost_usd != null) parts.push(usd(u.cost_usd));
    return parts.join(', ') || dash;
  }
  function cleanupBlock(c) {
    if (!c) return el('p', { class: 'muted' }, 'No cleanup record.');
    const yes = (v) => (v === null || v === undefined ? dash : v ? 'yes' : 'no');
    const rows = [
      ['Processes seen', int(c.processes_seen)],
      ['Stopped by hyoka', int(c.processes_killed)],
      ['Survivors', c.survivors ? el('span', { class: 'problem' }, int(c.survivors)) : int(c.survivors)],
      ['Workspace removed', yes(c.workspace_removed)],
      c.workspace_kept_at && ['Workspace kept at', el('code', {}, c.workspace_kept_at)],
      c.workspace_leftovers && c.workspace_leftovers.length && ['Left in the workspace', el('ul', {}, c.workspace_leftovers.map((l) => el('li', {}, l)))],
      ['Containment layers', c.layers && c.layers.length ? c.layers.join(', ') : dash],
    ].filter(Boolean);
    return el('dl', { class: 'facts' }, rows.map(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]));
  }
  function logBlock(name, tail, open) {
    if (!tail) return el('p', { class: 'muted' }, 'No ' + name + '.');
    const what = tail.cut ? 'the last lines of ' + int(tail.size) + ' bytes' : int(tail.size) + ' bytes';
    return el('details', { open: open || null }, el('summary', {}, name + ' (' + what + ')'),
      tail.text ? el('pre', { class: 'log', tabindex: '0' }, tail.text) : el('p', { class: 'muted' }, 'empty'));
  }
  const EVENT_PAGE = 200;
  function eventsBlock(d) {
    const n = d.events.length;
    const more = d.events_total > n ? ' (' + int(n) + ' kept of ' + int(d.events_total) + ')' : '';
    const body = el('tbody', {});
    const fill = (upto) => body.replaceChildren(...d.events.slice(0, upto).map((e) => el('tr', {},
      el('td', { class: 'num' }, '+' + ms(e[0])), el('td', {}, e[1]), el('td', {}, e[2] || ''),
      el('td', {}, e[3] ? el('code', {}, e[3]) : ''), el('td', {}, e[5] || (e[4] ? el('code', {}, e[4]) : '')))));
    fill(EVENT_PAGE);
    const all = n > EVENT_PAGE ? el('button', { type: 'button', onclick: (ev) => { fill(n); ev.currentTarget.remove(); } }, 'Show all ' + int(n) + ' events') : null;
    const omitted = S.index.input_cap === 0 ? el('p', { class: 'muted' }, 'Tool inputs are left out of the pages of runs this large; action_timeline.json keeps them.') : null;
    return el('details', {}, el('summary', {}, 'Events: ' + int(n) + more), omitted,
      n ? el('div', { class: 'table-wrap' }, el('table', { class: 'grid' },
        el('thead', {}, el('tr', {}, ['Time', 'Type', 'Tool', 'Path', 'Detail or input'].map((c) => el('th', { scope: 'col' }, c)))), body)) : el('p', { class: 'muted' }, 'No events.'),
      all);
  }

  // The timeline, to scale.
  const PHASES = ['setup', 'services', 'agent', 'build', 'review', 'cleanup'];
  function timelineFigure(d) {
    let end = d.duration_ms || 0;
    for (const p of d.phases) end = Math.max(end, (p.start_ms || 0) + p.duration_ms);
    for (const e of d.events) end = Math.max(end, e[0]);
    end = Math.max(end, 1);
    const names = PHASES.filter((n) => d.phases.some((p) => p.name === n));
    for (const p of d.phases) if (!names.includes(p.name)) names.push(p.name);
    const kinds = { turn: 'turns', tool_call: 'tool calls', file_created: 'files', file_changed: 'files', file_deleted: 'files' };
    const marks = ['turns', 'tool calls', 'files'].filter((lane) => d.events.some((e) => kinds[e[1]] === lane));
    const lanes = names.map((n) => 'phase:' + n).concat(marks);
    const W = 1000, L = 120, R = 985, top = 26, laneH = 22;
    const H = top + lanes.length * laneH + 30;
    const x = (t) => L + ((R - L) * Math.min(t, end)) / end;
    const y = (lane) => top + lanes.indexOf(lane) * laneH;
    const uid = 't' + Math.random().toString(36).slice(2, 8);
    const parts = [svg('defs', {},
      svg('pattern', { id: 'hatch-bad', width: 6, height: 6, patternUnits: 'userSpaceOnUse', patternTransform: 'rotate(45)' },
        svg('rect', { width: 6, height: 6, fill: '#ffebe9' }), svg('line', { x1: 0, y1: 0, x2: 0, y2: 6, stroke: '#cf222e', 'stroke-width': 3 })),
      svg('pattern', { id: 'hatch-err', width: 6, height: 6, patternUnits: 'userSpaceOnUse' },
        svg('rect', { width: 6, height: 6, fill: '#ffe7d1' }), svg('path', { d: 'M0 0L6 6M6 0L0 6', stroke: '#bc4c00', 'stroke-width': 1.5 })))];
    lanes.forEach((lane) => {
      const yy = y(lane);
      parts.push(svg('line', { class: 'lane', x1: L, x2: R, y1: yy + laneH / 2, y2: yy + laneH / 2 }));
      parts.push(svg('text', { x: L - 8, y: yy + laneH / 2 + 4, 'text-anchor': 'end' }, lane.replace('phase:', '')));
    });
    for (const p of d.phases) {
      const start = p.start_ms || 0;
      const x0 = x(start);
      const w = Math.max(2, x(start + p.duration_ms) - x0);
      const yy = y('phase:' + p.name);
      const known = ['passed', 'failed', 'skipped', 'error'].includes(p.status) ? p.status : 'other';
      parts.push(svg('rect', { class: 'phase ph-' + known, x: x0, y: yy + 4, width: w, height: laneH - 8, rx: 2 },
        svg('title', {}, p.name + ': ' + p.status + ', ' + ms(p.duration_ms) + ' from +' + ms(start) + (p.detail ? ' — ' + p.detail : ''))));
      const label = (SYMBOL[p.status] || '?') + ' ' + ms(p.duration_ms);
      // Inside a wide bar, else after it, else (at the right edge) before it.
      const inside = w > 70;
      const after = x0 + w + 64 < R;
      parts.push(svg('text', { x: inside ? x0 + 4 : after ? x0 + w + 4 : x0 - 4, y: yy + laneH / 2 + 4, 'text-anchor': inside || after ? 'start' : 'end', class: 'phase-label' }, label));
    }
    let markCount = 0;
    for (const e of d.events) {
      const lane = kinds[e[1]];
      const xx = x(e[0]);
      const tip = '+' + ms(e[0]) + ' ' + e[1] + (e[2] ? ' ' + e[2] : '') + (e[3] ? ' ' + e[3] : '') + (e[5] ? ' — ' + e[5] : '');
      if (lane) {
        const yy = y(lane) + laneH / 2;
        let m;
        if (e[1] === 'turn') m = svg('line', { class: 'mark m-turn', x1: xx, x2: xx, y1: yy - 7, y2: yy + 7 });
        else if (e[1] === 'tool_call') m = svg('circle', { class: 'mark m-tool', cx: xx, cy: yy, r: 3.5 });
        else if (e[1] === 'file_deleted') m = svg('path', { class: 'mark m-del', d: 'M' + (xx - 3) + ' ' + (yy - 3) + 'l6 6m0 -6l-6 6' });
        else m = svg('rect', { class: 'mark m-file', x: xx - 3, y: yy - 3, width: 6, height: 6 });
        m.append(svg('title', {}, tip));
        parts.push(m);
        markCount++;
      } else if (e[1] === 'limit_reached' || e[1] === 'signal') {
        const limit = e[1] === 'limit_reached';
        parts.push(svg('line', { class: 'mark ' + (limit ? 'm-limit' : 'm-signal'), x1: xx, x2: xx, y1: top - 6, y2: H - 28 }, svg('title', {}, tip)));
        const word = limit ? 'limit: ' + String(e[5] || '').split(' ')[0] : 'signal';
        parts.push(svg('text', { x: Math.min(xx + 4, R - 150), y: top - 10, class: limit ? 't-limit' : 'tick' }, (limit ? '⚠ ' : '') + word));
        markCount++;
      } else if (e[1] === 'exit' && names.includes('agent')) {
        const yy = y('phase:agent') + laneH / 2;
        parts.push(svg('path', { class: 'mark m-exit', d: 'M' + xx + ' ' + (yy - 6) + 'l5 6l-5 6l-5 -6z' }, svg('title', {}, tip)));
        markCount++;
      }
    }
    const axisY = H - 24;
    parts.push(svg('line', { class: 'axis', x1: L, x2: R, y1: axisY, y2: axisY }));
    const step = niceStep(end / 6);
    for (let t = 0; t <= end + 1e-9; t += step) {
      parts.push(svg('line', { class: 'axis', x1: x(t), x2: x(t), y1: axisY, y2: axisY + 4 }));
      parts.push(svg('text', { class: 'tick', x: x(t), y: axisY + 16, 'text-anchor': 'middle' }, ms(Math.round(t))));
    }
    const turns = d.events.filter((e) => e[1] === 'turn').length;
    const tools = d.events.filter((e) => e[1] === 'tool_call').length;
    const files = d.events.filter((e) => kinds[e[1]] === 'files').length;
    const limit = d.events.find((e) => e[1] === 'limit_reached');
    const summary = 'Timeline of trial ' + d.label + ' of ' + d.task + ' over ' + ms(end) + ': ' +
      d.phases.map((p) => p.name + ' ' + p.status + ' ' + ms(p.duration_ms)).join(', ') + '; ' + turns + ' turns, ' + tools + ' tool calls, ' + files + ' file events' +
      (limit ? '; ' + (limit[5] || 'a limit was crossed') + ' at +' + ms(limit[0]) : '') + '.';
    const image = svg('svg', { class: 'timeline', viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-labelledby': uid, 'data-marks': markCount }, svg('title', { id: uid }, summary), parts);
    return el('figure', { class: 'timeline' }, image,
      el('figcaption', {}, 'To scale. Bars: phases (solid passed, hatched red failed, crossed orange error, dashed outline skipped; ✓ ✗ – name the status). ' +
        'Marks: | turn, ● tool call, ■ file written, ✕ file deleted, ◆ agent exit; red dashed line: a limit crossed; grey dashed: a signal. Hover a mark for its detail; the events table lists them all.'));
  }
  function niceStep(raw) {
    if (!(raw > 0)) return 1;
    const p = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 5, 10]) if (raw <= m * p) return m * p;
    return 10 * p;
  }

  // Keyboard.
  function keys(e) {
    const typing = /^(INPUT|SELECT|TEXTAREA)$/.test(e.target.tagName);
    if (e.key === '/' && !typing) {
      e.preventDefault();
      $('#f-q').focus();
    } else if (e.key === 'Escape' && !$('#detail').hidden) {
      closeItem();
    } else if ((e.key === 'ArrowDown' || e.key === 'ArrowUp') && e.target.classList.contains('task-link')) {
      e.preventDefault();
      const tr = e.target.closest('tr');
      const next = e.key === 'ArrowDown' ? tr.nextElementSibling : tr.previousElementSibling;
      if (next) $('button.task-link', next).focus();
    }
  }
  function route() {
    const m = /^#task=(\d+)$/.exec(location.hash);
    if (m && Number(m[1]) < items().length) return openItem(Number(m[1]), true);
    return Promise.resolve();
  }

  // Start.
  async function start() {
    const state = $('#load-state');
    if (typeof DecompressionStream !== 'function') {
      state.textContent = 'This browser cannot inflate the page\'s data (it lacks DecompressionStream: Chrome 80, Firefox 113, Safari 16.4 or newer).';
      state.className = 'problem';
      return;
    }
    S.index = await inflate('hyoka-index');
    S.compare = S.index.kind === 'compare';
    S.cols = S.compare ? compareColumns() : runColumns(S.index.runs[0]);
    fillFilters();
    head();
    for (const id of ['#f-status', '#f-term', '#f-flip']) $(id).addEventListener('change', applyFilters);
    $('#f-q').addEventListener('input', applyFilters);
    $('#f-size').addEventListener('change', (e) => { S.size = Number(e.target.value); draw(); });
    $('#filters').addEventListener('submit', (e) => e.preventDefault());
    $('#p-prev').addEventListener('click', () => { S.page--; draw(); });
    $('#p-next').addEventListener('click', () => { S.page++; draw(); });
    $('#tasks tbody').addEventListener('click', (e) => {
      const b = e.target.closest('button.task-link');
      if (b) openItem(Number(b.dataset.i), true);
    });
    document.addEventListener('keydown', keys);
    addEventListener('hashchange', route);
    addEventListener('beforeprint', () => $$('details:not([open])').forEach((d) => { d.open = true; d.dataset.printOpened = '1'; }));
    addEventListener('afterprint', () => $$('details[data-print-opened]').forEach((d) => { d.open = false; delete d.dataset.printOpened; }));
    applyFilters();
    $('#filters').hidden = false;
    $('#tasks').hidden = false;
    state.hidden = true;
    const t = performance.now();
    document.documentElement.dataset.interactiveMs = t.toFixed(1);
    performance.mark('hyoka-interactive');
    if (location.hash === '#selftest') return selftest(t);
    return route();
  }

  // A self-check the browser test runs (#selftest): it drives the page as a person would and
  // writes what it saw, with every error the page met, into #hyoka-selftest.
  async function selftest(interactive) {
    const r = { interactive_ms: interactive, errors: window.hyokaErrors, checks: {} };
    const c = r.checks;
    try {
      c.kind = S.index.kind;
      c.task_rows = $('#tasks tbody').rows.length;
      c.columns = $('#tasks thead tr').cells.length;
      const sortButton = $('#tasks thead button[data-key="id"]');
      sortButton.click();
      c.sorted_ascending = !!$('#tasks thead th[aria-sort="ascending"] button[data-key="id"]');
      $('#tasks thead button[data-key="id"]').click();
      c.sorted_descending = !!$('#tasks thead th[aria-sort="descending"] button[data-key="id"]');
      const fs = $('#f-status');
      if (fs.options.length > 1) {
        fs.value = fs.options[1].value;
        applyFilters();
        c.filter_status = fs.value;
        c.filtered_rows = $('#tasks tbody').rows.length;
        fs.value = '';
        applyFilters();
      }
      const first = $('#tasks tbody button.task-link');
      await openItem(Number(first.dataset.i), false);
      c.detail_open = !$('#detail').hidden;
      c.trial_rows = $$('#detail table.trials tbody tr').length;
      c.timeline = !!$('#trial-view svg.timeline');
      c.phase_bars = $$('#trial-view svg.timeline rect.phase').length;
      c.marks = $$('#trial-view svg.timeline .mark').length;
      c.log = !!$('#trial-view pre.log');
      c.cleanup = $$('#trial-view dl.facts').length >= 2;
      if (S.compare) {
        c.compare_rows = S.index.compare.length;
        c.flipped = S.index.compare.filter((x) => x.flip).length;
        c.both_sides = $$('#detail .pair > div').length;
        const flip = $('#f-flip');
        flip.value = 'flipped';
        applyFilters();
        c.flipped_rows = $('#tasks tbody').rows.length;
        flip.value = '';
        applyFilters();
      }
    } catch (err) {
      r.errors.push('self-check: ' + err);
    }
    $('#hyoka-selftest').textContent = JSON.stringify(r);
    document.documentElement.dataset.selftest = 'done';
  }

  start().catch((err) => {
    const state = $('#load-state');
    state.hidden = false;
    state.className = 'problem';
    state.setAttribute('role', 'alert');
    state.textContent = 'Cannot read the page\'s data: ' + err;
    console.error(err);
    if (location.hash === '#selftest') {
      $('#hyoka-selftest').textContent = JSON.stringify({ errors: window.hyokaErrors, checks: {} });
    }
  });
})();
