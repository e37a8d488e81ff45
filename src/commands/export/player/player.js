// The player: the session's view at each moment, as codeloop computed it
// from the fold of the tape (the page's data), drawn where the cursor is.
// This script applies each record's frame (the slots of the view it
// changed) and draws; it never reads events, so it shows what the
// workbench's review shows. Every text goes into the page as text.
'use strict';
(function () {
  const D = JSON.parse(document.getElementById('data').textContent);
  const M = D.moments;
  const N = M.n;
  const CHECKPOINT = 1024;
  const SHOWN_LINES = 400;
  const CODE_LINES = 4000;
  const SPEEDS = [0.125, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64];
  const HISTORY = 0;

  // Numbers five bits a character (see `number` in player/mod.rs).
  const DIGITS = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_';
  function decode(s) {
    const out = [];
    let v = 0;
    for (let i = 0; i < s.length; i++) {
      const d = DIGITS.indexOf(s[i]);
      v = v * 32 + (d & 31);
      if (d < 32) { out.push(v); v = 0; }
    }
    return out;
  }
  const KIND = decode(M.k);
  const TIME = [];
  {
    let t = 0;
    for (const z of decode(M.t)) { t += (z % 2 ? -(z + 1) / 2 : z / 2); TIME.push(t); }
  }
  const SLOT = {};
  D.slots.forEach((name, i) => { SLOT[name] = i; });

  // The seq of the record just before cursor `c` (c >= 1).
  function seqAt(c) {
    const i = c - 1;
    let lo = 0, hi = M.seqs.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (M.seqs[mid][0] <= i) lo = mid; else hi = mid - 1;
    }
    const [at, seq] = M.seqs[lo];
    return seq + (i - at);
  }
  // The cursor just after the last record whose seq is at most `seq`.
  function cursorOfSeq(seq) {
    let lo = 0, hi = N;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (seqAt(mid) <= seq) lo = mid; else hi = mid - 1;
    }
    return lo;
  }

  // --- the view at the cursor: frames applied, copies kept along the way
  let cursor = 0;
  let slots = new Array(D.slots.length);
  let lines = [];
  const copies = [{ slots: slots.slice(), lines: [] }];
  function applyFrame(i) {
    const f = D.frames[i];
    if (f === 0) return;
    for (let j = 0; j < f.length; j += 2) {
      const s = f[j], v = f[j + 1];
      if (s === HISTORY && typeof v === 'number') {
        lines[lines.length - 1] = grow(lines[lines.length - 1], v);
      } else if (s === HISTORY) {
        lines.length = v[0];
        for (let k = 1; k < v.length; k++) lines.push(v[k]);
      } else if (v === null) {
        slots[s] = undefined;
      } else if (typeof v === 'number' && v < 0) {
        slots[s] = grow(slots[s], v);
      } else {
        slots[s] = v;
      }
    }
  }
  // A prefix grown by -by (a frame writes growth as a negative number).
  function grow(prefix, by) {
    const grown = prefix.slice();
    grown[1] = prefix[1] - by;
    return grown;
  }
  function seek(c) {
    c = Math.max(0, Math.min(N, c));
    if (c < cursor || c - cursor > 2 * CHECKPOINT) {
      let k = Math.floor(c / CHECKPOINT);
      while (k > 0 && !copies[k]) k--;
      if (k * CHECKPOINT > cursor || c < cursor) {
        slots = copies[k].slots.slice();
        lines = copies[k].lines.slice();
        cursor = k * CHECKPOINT;
      }
    }
    while (cursor < c) {
      applyFrame(cursor);
      cursor++;
      if (cursor % CHECKPOINT === 0 && !copies[cursor / CHECKPOINT]) {
        copies[cursor / CHECKPOINT] = { slots: slots.slice(), lines: lines.slice() };
      }
    }
  }
  function raw(name) { const i = SLOT[name]; return i === undefined ? undefined : slots[i]; }
  function val(name) {
    const v = raw(name);
    return typeof v === 'number' ? D.vals[v] : v;
  }
  function prefix(p) { return D.texts[p[0]].slice(0, p[1]); }

  // --- the page's parts
  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function pane(id, title) {
    const s = el('section', 'pane');
    s.id = id;
    const h = el('h2');
    h.append(el('span', 'pane-name', title), el('span', 'detail'));
    s.append(h);
    return s;
  }
  const app = document.getElementById('app');
  const bar = el('header', 'bar');
  const top = el('div', 'top');
  const title = el('h1', '', 'codeloop');
  const task = el('span', 'task-line', (D.head.task || '').split('\n')[0]);
  title.append(' ', task);
  const badge = el('span', 'badge');
  top.append(title, badge);
  const controls = el('div', 'controls');
  function button(label, name, act) {
    const b = el('button', '', label);
    b.type = 'button';
    b.title = name;
    b.setAttribute('aria-label', name);
    b.addEventListener('click', () => { act(); draw(); });
    return b;
  }
  const playButton = button('▶ play', 'play / pause (space)', () => togglePlay());
  const speed = el('select');
  speed.setAttribute('aria-label', 'speed');
  SPEEDS.forEach((s) => {
    const o = el('option', '', '×' + s);
    o.value = String(s);
    speed.append(o);
  });
  speed.value = '1';
  speed.addEventListener('change', () => { rate = Number(speed.value); due = null; });
  const where = el('span', 'where');
  where.id = 'where';
  const link = el('a', 'link', 'link to this moment');
  link.id = 'link';
  const helpButton = button('?', 'keys (?)', () => { help.hidden = !help.hidden; });
  controls.append(
    button('Home', 'first event (Home)', () => { pause(); go(0); }),
    button('[', 'previous iteration ([)', () => { pause(); iteration(false); }),
    button('←', 'previous event (←)', () => { pause(); go(cursor - 1); }),
    playButton,
    button('→', 'next event (→)', () => { pause(); go(cursor + 1); }),
    button(']', 'next iteration (])', () => { pause(); iteration(true); }),
    button('End', 'last event (End)', () => { pause(); go(N); }),
    speed, where, link, helpButton,
  );
  const scrub = el('input');
  scrub.type = 'range';
  scrub.min = '0';
  scrub.max = String(N);
  scrub.id = 'scrub';
  scrub.setAttribute('aria-label', 'timeline: the event shown');
  scrub.addEventListener('input', () => { pause(); go(Number(scrub.value)); });
  const marks = el('div', 'marks');
  const timeline = el('div', 'timeline');
  timeline.append(marks, scrub);
  bar.append(top, controls, timeline);

  const main = el('main', 'panes');
  const taskPane = pane('task', 'Task');
  taskPane.append(el('div', 'task-text', D.head.task || ''));
  const facts = el('p', 'facts',
    [D.head.model && 'model ' + D.head.model, D.head.sandbox && 'sandbox ' + D.head.sandbox,
      D.head.started && 'started ' + D.head.started, D.head.id && 'session ' + D.head.id]
      .filter(Boolean).join(' · '));
  taskPane.append(facts);
  const graphPane = pane('workflow', 'Workflow');
  const graph = el('div', 'graph-box');
  const planText = el('pre', 'plan-stream');
  graphPane.append(graph, planText);
  const codePane = pane('code', 'Code');
  const tabs = el('div', 'tabs');
  const TABS = [['code', 'code', ''], ['tests', 't tests', 't'], ['diff', 'd diff', 'd'], ['program', 'p program', 'p']];
  const tabButtons = {};
  TABS.forEach(([name, label, key]) => {
    const b = button(label, key ? name + ' (' + key + ')' : name, () => { tab = tab === name ? 'code' : name; });
    tabButtons[name] = b;
    tabs.append(b);
  });
  codePane.querySelector('h2').append(tabs);
  const codeSpec = el('p', 'spec');
  const codeBody = el('div', 'code-body');
  const codeNotes = el('div', 'notes');
  codePane.append(codeSpec, codeBody, codeNotes);
  const outputPane = pane('output', 'Output');
  const outputBody = el('div', 'output-body mono');
  const outputNote = el('p', 'note');
  outputPane.append(outputNote, outputBody);
  const whyPane = pane('reflection', 'Reflection');
  const whyBody = el('p', 'why');
  whyPane.append(whyBody);
  const valuesPane = pane('values', 'Runtime values');
  const valuesBody = el('pre', 'values');
  valuesPane.append(valuesBody);
  const historyPane = pane('history', 'History');
  const historyNote = el('p', 'note');
  const historyList = el('ol', 'history mono');
  const notesList = el('ul', 'notices');
  historyPane.append(historyNote, historyList, notesList);
  const left = el('div', 'col left');
  left.append(graphPane, historyPane, taskPane);
  const right = el('div', 'col right');
  const side = el('div', 'side');
  side.append(whyPane, valuesPane);
  right.append(codePane, outputPane, side);
  main.append(left, right);
  const help = el('div', 'help');
  help.hidden = true;
  help.setAttribute('role', 'dialog');
  help.append(el('h2', '', 'Keys'));
  const keyTable = el('table');
  [['← / →', 'previous / next event'], ['[ / ]', 'previous / next iteration'],
    ['Home / End', 'first / last event'], ['f', 'the first failure'],
    ['space', 'play / pause'], ['+ / -', 'faster / slower'],
    ['↑ / ↓', 'select a node (the engine\'s is followed until you do)'], ['l', 'follow the engine again'],
    ['t / d / p', 'tests / diff / program (again: the code)'], ['?', 'these keys'],
    ['', 'The address bar always links to the moment shown (#seq=N).']]
    .forEach(([k, d]) => {
      const tr = el('tr');
      tr.append(el('th', '', k), el('td', '', d));
      keyTable.append(tr);
    });
  help.append(keyTable);
  app.append(bar, main, help);

  // The timeline's marks: iterations and failures, at most a few hundred each.
  function placeMarks(list, cls) {
    const step = Math.max(1, Math.ceil(list.length / 300));
    for (let i = 0; i < list.length; i += step) {
      const m = el('span', 'mark ' + cls);
      m.style.left = (N ? (100 * list[i] / N) : 0) + '%';
      marks.append(m);
    }
  }
  placeMarks(M.iters, 'iteration');
  placeMarks(M.fails, 'failure');

  // --- what the person chose
  let pinned = null;
  let tab = 'code';
  let playing = false;
  let rate = 1;
  let due = null;

  function names() {
    const plan = val('plan');
    return plan ? plan.names : [];
  }
  function selected() {
    if (pinned && raw('n/' + pinned) !== undefined) return pinned;
    const act = val('act');
    if (act && raw('n/' + act) !== undefined) return act;
    return names()[0] || null;
  }

  // --- drawing: each part only when what it shows changed
  const drawn = {};
  function changed(part, key) {
    if (drawn[part] === key) return false;
    drawn[part] = key;
    return true;
  }
  function keyOf(...xs) { return JSON.stringify(xs); }

  // A text's lines, as Rust's `str::lines` counts them (no last empty one).
  function linesOf(text) {
    const rows = text.split('\n');
    if (rows.length && rows[rows.length - 1] === '') rows.pop();
    return rows;
  }
  function listing(text, mark, note) {
    const table = el('table', 'listing mono');
    const rows = linesOf(text);
    const shown = Math.min(rows.length, CODE_LINES);
    for (let i = 0; i < shown; i++) {
      const tr = el('tr');
      tr.append(el('td', 'no', String(i + 1)));
      const td = el('td', 'text', rows[i]);
      if (i === mark) {
        tr.className = 'fail-line';
        td.append(el('span', 'fail-note', '◀ ' + note));
      }
      tr.append(td);
      table.append(tr);
    }
    const box = el('div');
    box.append(table);
    if (rows.length > shown) box.append(el('p', 'note', (rows.length - shown) + ' more lines are not drawn'));
    return box;
  }
  function diffListing(oldText, newText, tags) {
    const table = el('table', 'listing diff mono');
    const a = linesOf(oldText), b = linesOf(newText);
    let i = 0, j = 0;
    for (const tag of tags) {
      const tr = el('tr');
      let text;
      if (tag === '=') { text = b[j]; tr.append(el('td', 'no', String(i + 1)), el('td', 'no', String(j + 1))); i++; j++; }
      else if (tag === '-') { text = a[i]; tr.className = 'del'; tr.append(el('td', 'no', String(i + 1)), el('td', 'no', '')); i++; }
      else { text = b[j]; tr.className = 'add'; tr.append(el('td', 'no', ''), el('td', 'no', String(j + 1))); j++; }
      tr.append(el('td', 'sign', tag === '=' ? ' ' : tag), el('td', 'text', text === undefined ? '' : text));
      table.append(tr);
    }
    return table;
  }

  function drawBar() {
    const seq = cursor > 0 ? seqAt(cursor) : null;
    const kind = cursor > 0 ? M.kinds[KIND[cursor - 1]] : 'before the first event';
    const t = cursor > 0 ? TIME[cursor - 1] : 0;
    const mm = Math.floor(t / 60000), ss = ((t % 60000) / 1000).toFixed(1);
    where.textContent = 'event ' + cursor + '/' + N + (seq !== null ? ' · #' + seq : '') + ' · ' + kind +
      ' · ' + String(mm).padStart(2, '0') + ':' + ss.padStart(4, '0') + ' · ' + (val('tokens') || 0) + ' tokens';
    link.href = seq !== null ? '#seq=' + seq : '#';
    scrub.value = String(cursor);
    const b = val('badge');
    if (b && changed('badge', keyOf(b))) {
      badge.className = 'badge ' + b.cls;
      badge.textContent = b.label;
      badge.title = b.line || '';
    }
    playButton.textContent = playing ? '❚❚ pause' : '▶ play';
    app.dataset.cursor = String(cursor);
    app.dataset.seq = seq === null ? '' : String(seq);
  }

  function drawGraph(node) {
    const plan = val('plan');
    if (changed('plan', plan ? plan.svg : -1)) {
      graph.textContent = '';
      if (plan) {
        // The plan's SVG is codeloop's own markup, its texts escaped.
        graph.innerHTML = D.texts[plan.svg];
        // Drawn for 15 px text: it grows with the page's text (a projector's).
        const svg = graph.querySelector('svg');
        if (svg) svg.style.width = (svg.width.baseVal.value / 15) + 'rem';
        graph.querySelectorAll('g[data-node]').forEach((g) => {
          g.addEventListener('click', () => { pinned = g.dataset.node; draw(); });
        });
      }
    }
    let passed = 0, all = 0;
    graph.querySelectorAll('g[data-node]').forEach((g) => {
      const name = g.dataset.node;
      const n = val('n/' + name);
      all++;
      if (n && n.st === 'passed') passed++;
      const cls = 'node ' + (n ? n.st : 'pending') + (name === node ? ' selected' : '') +
        (name === val('act') ? ' active' : '');
      if (g.getAttribute('class') !== cls) g.setAttribute('class', cls);
      g.dataset.status = n ? n.sl : 'pending';
      const sub = g.querySelector('text.sub');
      const words = n ? n.sub : 'pending';
      if (sub && sub.textContent !== words) sub.textContent = words;
    });
    graphPane.querySelector('.detail').textContent = plan ? passed + '/' + all + ' passed' : '';
    // The selected node stays in sight in a long plan.
    if (changed('graphSelected', node)) {
      const g = node && [...graph.querySelectorAll('g[data-node]')].find((x) => x.dataset.node === node);
      if (g) {
        const box = graph.getBoundingClientRect(), at = g.getBoundingClientRect();
        if (at.top < box.top || at.bottom > box.bottom) graph.scrollTop += at.top - box.top - box.height / 3;
        if (at.left < box.left || at.right > box.right) graph.scrollLeft += at.left - box.left - 16;
      }
    }
    const error = val('plan_error');
    const stream = raw('plan_stream');
    let text = '';
    if (!plan && stream) text = prefix(stream) + (stream[3] & 1 ? '▌' : '');
    if (!plan && error) text = 'The plan could not be used: ' + error + (text ? '\n\n' + text : '');
    if (!plan && !text) text = cursor === 0 ? 'Nothing yet: → steps through the session.' : 'No plan yet.';
    if (plan) text = '';
    if (planText.textContent !== text) planText.textContent = text;
  }

  function drawCode(name) {
    const n = name ? val('n/' + name) : undefined;
    const stream = name ? raw('s/' + name) : undefined;
    const prog = val('prog');
    Object.entries(tabButtons).forEach(([k, b]) => b.classList.toggle('on', k === tab));
    let detail = '';
    const spec = name ? val('i/' + name) : undefined;
    const key = keyOf(tab, name, raw('n/' + name), raw('i/' + name), stream && stream[0], stream && stream[1], tab === 'program' && prog);
    if (!changed('code', key)) return;
    codeSpec.textContent = '';
    if (spec && tab !== 'program') codeSpec.append(el('code', '', spec.sig), ': ' + spec.what);
    codeBody.textContent = '';
    codeNotes.textContent = '';
    codePane.dataset.node = name || '';
    codePane.dataset.iteration = n ? String(n.it) : '';
    if (tab === 'program') {
      detail = 'assembled program';
      if (prog) codeBody.append(listing(D.texts[prog.c], -1, ''));
      else codeBody.append(el('p', 'none', 'no program yet: it is assembled when every node passes'));
    } else if (!n) {
      codeBody.append(el('p', 'none', names().length ? 'select a node (↑ / ↓, or click it in the workflow)' : 'the selected node\'s code shows here'));
    } else if (tab === 'code') {
      detail = name + (n.it ? ' · iteration ' + n.it + ' (' + n.src + ')' : '');
      if (n.why) detail = name + ' · the model is reflecting on the failure';
      if (stream && !n.why) {
        detail = name + ' · the model is writing…';
        const pre = el('pre', 'streaming mono', prefix(stream));
        pre.append(el('span', 'cursor', '▌'));
        codeBody.append(pre);
        if (stream[2]) codeBody.append(el('p', 'note', 'the reply goes on past what this page keeps'));
      } else if (n.c !== undefined) {
        const f = n.f;
        codeBody.append(listing(D.texts[n.c], f && f.cl !== undefined ? f.cl : -1, f ? f.w : ''));
      } else {
        codeBody.append(el('p', 'none', 'no code for ' + name + ' yet'));
      }
    } else if (tab === 'tests') {
      detail = name + ' · tests';
      if (n.t !== undefined) {
        const f = n.f;
        codeBody.append(listing(D.texts[n.t], f && f.tl !== undefined ? f.tl : -1, f ? f.w : ''));
      } else codeBody.append(el('p', 'none', 'no tests for ' + name + ' yet'));
    } else if (tab === 'diff') {
      if (n.p !== undefined) {
        detail = name + ' · iteration ' + n.pit + ' → ' + n.it;
        codeBody.append(diffListing(D.texts[n.p], D.texts[n.c], D.texts[n.d]));
      } else codeBody.append(el('p', 'none', 'only one iteration so far: nothing to compare'));
    }
    codePane.querySelector('.detail').textContent = detail;
    if (n && tab !== 'program') {
      const note = (cls, text) => codeNotes.append(el('p', cls, text));
      if (n.f && tab !== 'diff') {
        note('fail', '✗ ' + n.f.h);
        if (n.f.more) note('', '  ' + n.f.more);
      }
      if (n.e) note('earlier', n.e);
      if (tab === 'code') {
        if (n.rev) note('review', n.rev);
        (n.chk || []).forEach((c) => note('warn', c));
      }
    }
  }

  function stderrRanges(tid) {
    const s = D.streams[String(tid)] || [];
    const out = [];
    for (let i = 0; i < s.length; i += 2) out.push([s[i], s[i + 1]]);
    return out;
  }
  function drawOutput(name) {
    const n = name ? val('n/' + name) : undefined;
    const prog = val('prog');
    const run = tab === 'program' ? (prog ? prog.run : undefined) : (n ? n.run : undefined);
    const r = run !== undefined ? val('r/' + run) : undefined;
    const o = run !== undefined ? raw('o/' + run) : undefined;
    if (!changed('output', keyOf(run, r, o))) return;
    const detail = outputPane.querySelector('.detail');
    detail.textContent = r ? r.title + ' · ' + r.verdict + (r.fig ? ' · ' + r.fig : '') : '';
    detail.className = 'detail ' + (r ? r.cls : '');
    outputBody.textContent = '';
    outputPane.dataset.run = run === undefined ? '' : String(run);
    let note = '';
    if (!o) {
      outputBody.append(el('p', 'none', 'no run yet'));
    } else {
      const text = prefix(o);
      const ranges = stderrRanges(o[0]);
      const all = linesOf(text);
      const from = Math.max(0, all.length - SHOWN_LINES);
      let offset = 0;
      for (let i = 0; i < from; i++) offset += all[i].length + 1;
      let r2 = 0;
      for (let i = from; i < all.length; i++) {
        while (r2 + 1 < ranges.length && ranges[r2 + 1][0] <= offset) r2++;
        const err = ranges.length && ranges[r2][0] <= offset && ranges[r2][1] === 1;
        outputBody.append(el('div', err ? 'line err' : 'line', all[i]));
        offset += all[i].length + 1;
      }
      if (!all.length) outputBody.append(el('p', 'none', '(no output)'));
      if (from > 0) note = from + ' earlier lines are above these (the page shows the last ' + SHOWN_LINES + ')';
      if (o[3] === 1 || (o.length > 3 && o[3] & 1)) note = 'the run printed more than this page keeps: its first ' + Math.round(D.kept / 1024) + ' KB are shown; the run\'s log has all of it';
      if (o[2] && !(o[3] & 1)) note = o[2] + ' bytes printed before these are not in this page; the run\'s log has them';
    }
    outputNote.textContent = note;
    outputNote.hidden = !note;
    outputBody.scrollTop = outputBody.scrollHeight;
  }

  function drawWhy(name) {
    const w = name ? raw('w/' + name) : undefined;
    const n = name ? val('n/' + name) : undefined;
    if (changed('why', keyOf(name, w, n && n.v))) {
      whyBody.textContent = '';
      if (w) {
        whyBody.append(prefix(w).trim());
        const flag = w[3] || 0;
        if (flag & 1) whyBody.append(el('span', 'cursor', '▌'));
        else if (!(flag & 2)) whyBody.append(el('span', 'note', ' (the reply was cut off here)'));
      } else {
        whyBody.append(el('span', 'none', name ? 'no reflection on ' + name + ' yet' : 'no reflection yet'));
      }
      whyPane.querySelector('.detail').textContent = name || '';
      valuesBody.textContent = n && n.v !== undefined ? D.texts[n.v] : '';
      if (!valuesBody.textContent) valuesBody.append(el('span', 'none', 'no runtime values at this moment'));
    }
  }

  let historyShown = [];
  function historyItem(item) {
    if (typeof item === 'number') {
      const [cls, text] = D.vals[item];
      return el('li', cls, text);
    }
    const li = el('li', 'why', '    why:   ' + prefix(item).trim());
    if ((item[3] || 0) & 1) li.append(el('span', 'cursor', '▌'));
    return li;
  }
  function sameItem(a, b) {
    return a === b || (Array.isArray(a) && Array.isArray(b) && a[0] === b[0] && a[1] === b[1] && a[3] === b[3]);
  }
  function drawHistory() {
    const from = Math.max(0, lines.length - SHOWN_LINES);
    const win = lines.slice(from);
    if (from !== drawn.historyFrom) { historyList.textContent = ''; historyShown = []; drawn.historyFrom = from; }
    let k = 0;
    while (k < win.length && k < historyShown.length && sameItem(win[k], historyShown[k])) k++;
    if (k === win.length && k === historyShown.length) return;
    while (historyList.children.length > k) historyList.lastChild.remove();
    for (let i = k; i < win.length; i++) historyList.append(historyItem(win[i]));
    historyShown = win;
    historyNote.textContent = from ? from + ' earlier lines are not drawn' : '';
    historyNote.hidden = !from;
    if (!lines.length) historyList.append(el('li', 'none', 'iterations and reflections show here'));
    historyList.scrollTop = historyList.scrollHeight;
    const notes = val('notes') || [];
    if (changed('notes', keyOf(notes))) {
      notesList.textContent = '';
      notes.forEach(([level, text]) => notesList.append(el('li', level, 'note: ' + text)));
    }
  }

  let hashTimer = null;
  function drawHash() {
    if (hashTimer !== null) return;
    hashTimer = setTimeout(() => {
      hashTimer = null;
      const seq = cursor > 0 ? seqAt(cursor) : null;
      const hash = seq === null ? '' : '#seq=' + seq;
      if (location.hash !== hash) {
        try { history.replaceState(null, '', hash || location.pathname + location.search); } catch (e) { /* file:// in some browsers */ }
      }
    }, playing ? 500 : 0);
  }

  let frameAsked = false;
  function draw() {
    if (frameAsked) return;
    frameAsked = true;
    requestAnimationFrame(() => { frameAsked = false; drawNow(); });
  }
  function drawNow() {
    const node = selected();
    app.dataset.node = node || '';
    drawBar();
    drawGraph(node);
    drawCode(node);
    drawOutput(node);
    drawWhy(node);
    drawHistory();
    drawHash();
    app.dataset.ready = 'yes';
  }

  // --- moving
  function go(c) { seek(c); due = null; draw(); }
  function iteration(forward) {
    const list = M.iters;
    let target = null;
    if (forward) { for (const x of list) if (x > cursor) { target = x; break; } }
    else { for (let i = list.length - 1; i >= 0; i--) if (list[i] < cursor) { target = list[i]; break; } }
    if (target !== null) go(target);
  }
  function selectBy(step) {
    const list = names();
    if (!list.length) return;
    const at = list.indexOf(selected());
    pinned = list[Math.max(0, Math.min(list.length - 1, at < 0 ? 0 : at + step))];
  }
  function pause() { playing = false; due = null; }
  function togglePlay() {
    playing = !playing;
    due = null;
    if (playing && cursor >= N) seek(0);
    if (playing) requestAnimationFrame(tick);
  }
  function gap(from, to) {
    if (from < 0 || to >= N) return 0;
    return Math.min(Math.max(TIME[to] - TIME[from], 0), D.gap) / rate;
  }
  function tick(now) {
    if (!playing) return;
    if (due === null) due = cursor === 0 ? now : now + gap(cursor - 1, cursor);
    let applied = 0;
    while (cursor < N && due <= now && applied < 20000) {
      seek(cursor + 1);
      applied++;
      due += gap(cursor - 1, cursor);
    }
    if (cursor >= N) pause();
    draw();
    if (playing) requestAnimationFrame(tick);
  }
  function faster(up) {
    const i = SPEEDS.indexOf(rate);
    rate = SPEEDS[Math.max(0, Math.min(SPEEDS.length - 1, (i < 0 ? 3 : i) + (up ? 1 : -1)))];
    speed.value = String(rate);
    due = null;
  }

  document.addEventListener('keydown', (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.target && e.target.tagName === 'SELECT') return;
    const k = e.key;
    const acts = {
      ArrowLeft: () => { pause(); go(cursor - 1); },
      ArrowRight: () => { pause(); go(cursor + 1); },
      '[': () => { pause(); iteration(false); },
      ']': () => { pause(); iteration(true); },
      Home: () => { pause(); go(0); },
      End: () => { pause(); go(N); },
      f: () => { if (M.first !== null && M.first !== undefined) { pause(); go(M.first); } },
      ' ': () => togglePlay(),
      '+': () => faster(true),
      '=': () => faster(true),
      '-': () => faster(false),
      ArrowUp: () => selectBy(-1),
      ArrowDown: () => selectBy(1),
      l: () => { pinned = null; },
      t: () => { tab = tab === 'tests' ? 'code' : 'tests'; },
      d: () => { tab = tab === 'diff' ? 'code' : 'diff'; },
      p: () => { tab = tab === 'program' ? 'code' : 'program'; },
      '?': () => { help.hidden = !help.hidden; },
      Escape: () => { help.hidden = true; },
    };
    const act = acts[k];
    if (!act) return;
    e.preventDefault();
    act();
    draw();
  });

  function fromHash() {
    const m = /^#seq=(\d+)$/.exec(location.hash);
    if (m) { pause(); seek(cursorOfSeq(Number(m[1]))); return true; }
    return false;
  }
  window.addEventListener('hashchange', () => { if (fromHash()) draw(); });
  if (!fromHash()) seek(N);
  drawNow();
})();
