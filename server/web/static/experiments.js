// experiments.js — experiments in the page: the form that starts one from a
// dataset's view (assistant and version, repetitions, optional baseline,
// optional second assistant or version to compare with; POST
// /experiments), the list (#/experiments: dataset, assistant, status, pass
// rate) and one experiment (#/experiments/{id}): its progress followed on
// GET /experiments/{id}/stream, then its summary and per-case results (each
// evaluator's score and explanation, a link to the case's thread), its
// baseline's progress followed alongside, and a Compare control that sets
// it against a baseline (GET …/compare), shown at once for its own.

import * as api from './api.js';
import { clear, h, uid } from './dom.js';
import { nameOf } from './welcome.js';

let view = null; // the view's section
let follow = null; // aborts the followed stream when the view changes

const pct = (x) => `${Math.round(x * 100)}%`;
const num = (x) => (Math.round(x * 100) / 100).toString();
const ended = (s) => s === 'success' || s === 'error' || s === 'cancelled';

/** mount wires the view. */
export function mount(els) {
  view = els.view;
}

/** stop ends the followed stream (the page left the view). */
export function stop() {
  if (follow) follow.abort();
  follow = null;
}

// names fetches the datasets' and assistants' names by ID.
async function names() {
  const [ds, as] = await Promise.all([api.json('POST', '/datasets/search', { limit: 100 }), api.json('POST', '/assistants/search', { limit: 100 })]);
  return { ds: new Map(ds.map((d) => [d.dataset_id, d.name])), as: new Map(as.map((a) => [a.assistant_id, nameOf(a)])), assistants: as };
}

// passRate is the share of recorded units that passed (the summary's once
// the experiment succeeded).
function passRate(e) {
  if (e.summary && e.summary.pass_rate) return pct(e.summary.pass_rate.value);
  return e.progress && e.progress.done ? pct(e.progress.passed / e.progress.done) : '—';
}

// versionOf names an experiment's pinned assistant version ('' for the
// latest).
const versionOf = (e) => (e.assistant_version ? ` v${e.assistant_version}` : '');

// optionLabel names an experiment in a baseline picker: its name, then
// the assistant and version unless the name already says them (a pair
// started side by side is named "<name> · <assistant> vN").
function optionLabel(x, n) {
  const name = x.name || x.experiment_id.slice(0, 8);
  const who = `${n.as.get(x.assistant_id) || ''}${versionOf(x)}`.trim();
  return who && !name.includes(who) ? `${name} · ${who} · ${passRate(x)}` : `${name} · ${passRate(x)}`;
}

const badge = (status) => h('span', { class: `badge exp-status ${ended(status) ? (status === 'success' ? '' : 'error') : 'busy'}` }, status);

/** show draws the list (id null) or one experiment, and reports failures. */
export async function show(id) {
  stop();
  clear(view);
  const title = h('h2', { id: 'experiments-title', tabindex: '-1' }, 'Experiments');
  const head = h('header', { class: 'datasets-head exp-body' }, title, h('a', { href: '#/datasets' }, 'Datasets'), h('a', { href: '#/new', class: 'back' }, 'Back to the chat'));
  const body = h('div', { class: 'datasets-body exp-body' });
  const error = h('p', { class: 'error', role: 'alert', hidden: true });
  view.append(head, error, body);
  const fail = (e) => { error.textContent = e.message; error.hidden = false; };
  try {
    if (id) await showOne(id, title, head, body, fail);
    else await showList(body);
  } catch (e) { fail(e); }
  title.focus();
}

async function showList(body) {
  const [list, n] = await Promise.all([api.json('GET', '/experiments?limit=100'), names()]);
  if (!list.length) {
    body.append(h('p', { class: 'hint' }, 'No experiments yet. Open a dataset and use “Run an experiment”.'));
    return;
  }
  body.append(h('table', { class: 'datasets-table exp-table' },
    h('caption', { class: 'visually-hidden' }, 'Experiments, newest first'),
    h('thead', {}, h('tr', {}, ['Experiment', 'Dataset', 'Assistant', 'Status', 'Pass rate'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, list.map((e) => h('tr', { 'data-experiment': e.experiment_id },
      h('td', {}, h('a', { href: `#/experiments/${e.experiment_id}` }, e.name || e.experiment_id.slice(0, 8))),
      h('td', {}, n.ds.get(e.dataset_id) || e.dataset_id.slice(0, 8), ` v${e.dataset_version}`),
      h('td', {}, n.as.get(e.assistant_id) || e.assistant_id.slice(0, 8), versionOf(e)),
      h('td', {}, badge(e.status)),
      h('td', { class: 'exp-rate' }, passRate(e)))))));
}

async function showOne(id, title, head, body, fail) {
  const [e, n] = await Promise.all([api.json('GET', `/experiments/${id}`), names()]);
  const base = e.baseline_experiment_id ? await api.json('GET', `/experiments/${e.baseline_experiment_id}`).catch(() => null) : null;
  title.textContent = e.name || `Experiment ${id.slice(0, 8)}`;
  head.querySelector('.back').before(h('a', { href: '#/experiments' }, 'All experiments'));
  const dsName = n.ds.get(e.dataset_id) || e.dataset_id;
  body.append(h('p', { class: 'ds-facts exp-facts' },
    h('a', { href: `#/datasets/${e.dataset_id}` }, dsName), ` v${e.dataset_version} · ${n.as.get(e.assistant_id) || e.assistant_id}${versionOf(e)} · `,
    `${e.repetitions} ${e.repetitions === 1 ? 'repetition' : 'repetitions'}`));
  const own = progressBar('Units recorded');
  const cancel = h('button', { type: 'button', class: 'small danger' }, 'Cancel the experiment');
  const live = h('div', { class: 'ds-bar exp-live' }, own.bar, own.status, cancel);
  const summary = h('div', { class: 'exp-summary' });
  const results = h('div', { class: 'exp-results' });
  const compare = h('div', { class: 'exp-compare' });
  body.append(live);
  // The baseline's progress alongside (two experiments started together).
  let baseEnded = Promise.resolve();
  const ctl = new AbortController();
  follow = ctl;
  if (base) {
    const label = base.name || `${base.experiment_id.slice(0, 8)} · ${n.as.get(base.assistant_id) || base.assistant_id}${versionOf(base)}`;
    const bp = progressBar(`Units recorded by the baseline ${label}`);
    body.append(h('div', { class: 'ds-bar exp-live exp-base-live' },
      h('span', { class: 'exp-base-label' }, 'Baseline ', h('a', { href: `#/experiments/${base.experiment_id}` }, label)), bp.bar, bp.status));
    bp.paint(base);
    if (!ended(base.status)) baseEnded = followStream(base.experiment_id, ctl, bp.paint);
  }
  body.append(summary, compare, results);
  cancel.addEventListener('click', async () => {
    try { await api.json('POST', `/experiments/${id}/cancel`); } catch (err) { fail(err); }
  });
  const paint = (x) => { own.paint(x); cancel.hidden = ended(x.status); };
  paint(e);
  const finish = async (x) => {
    paint(x);
    if (x.error) fail(new Error(x.error));
    drawSummary(summary, x);
    drawResults(results, await api.json('GET', `/experiments/${id}/results`));
    await baseEnded;
    if (x.status === 'success' && !ctl.signal.aborted) await drawCompare(compare, x, n, fail);
  };
  baseEnded = baseEnded.catch((err) => { if (!ctl.signal.aborted) fail(err); });
  if (ended(e.status)) { await finish(e); return; }
  // Follow the stream until the end event; draw the results then.
  followStream(id, ctl, paint).then((x) => { if (x) return finish(x); })
    .catch((err) => { if (!ctl.signal.aborted) fail(err); });
}

// progressBar is an experiment's progress bar and status line; paint
// draws an experiment (or a progress event) on them.
function progressBar(label) {
  const status = h('p', { class: 'exp-progress', role: 'status' });
  const bar = h('progress', { max: '1', value: '0', 'aria-label': label });
  const paint = (x) => {
    const p = x.progress || { total: 0, done: 0, passed: 0, failed: 0 };
    bar.max = Math.max(p.total, 1);
    bar.value = p.done;
    status.textContent = `${x.status} · ${p.done} of ${p.total} recorded · ${p.passed} passed, ${p.failed} failed`;
    status.dataset.status = x.status;
  };
  return { bar, status, paint };
}

// followStream paints an experiment's progress events until its end and
// returns the ended experiment (undefined when the view changed first).
async function followStream(id, ctl, paint) {
  for await (const ev of api.stream('GET', `/experiments/${id}/stream`, undefined, { signal: ctl.signal })) {
    if (ev.event === 'progress') paint(ev.data);
    else if (ev.event === 'end') { paint(ev.data); return ev.data; }
  }
  // The stream closed before its end event: read where it got to.
  if (ctl.signal.aborted) return undefined;
  const x = await api.json('GET', `/experiments/${id}`);
  if (ended(x.status)) return x;
  paint(x);
  throw new Error('The progress stream closed; reload to follow it again.');
}

// drawSummary shows the pass rates and mean score with their intervals.
function drawSummary(el, e) {
  clear(el);
  const s = e.summary;
  if (!s) return;
  const iv = (i, f) => `${f(i.value)} (95% ${f(i.low)}–${f(i.high)})`;
  const rows = [
    ['Cases passed', `${s.cases_passed} of ${s.cases} · ${iv(s.case_pass_rate, pct)}`],
    ['Trials passed', `${s.trials_passed} of ${s.trials} · ${iv(s.pass_rate, pct)}`],
    ['Mean score', iv(s.mean_score, num)],
  ];
  if (s.k > 1) rows.push([`pass@${s.k} / pass^${s.k}`, `${pct(s.pass_at_k)} / ${pct(s.pass_hat_k)}`]);
  el.append(h('h3', {}, 'Summary'), h('dl', { class: 'case-facts exp-summary-facts' }, rows.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])));
}

// drawResults lists each case × repetition with its scores and thread.
function drawResults(el, rs) {
  clear(el);
  el.append(h('h3', {}, 'Results'));
  if (!rs.length) { el.append(h('p', { class: 'hint' }, 'No results recorded.')); return; }
  el.append(h('ol', { class: 'cases exp-result-list' }, rs.map((r) => h('li', { class: 'case exp-result', 'data-case': r.case_id, 'data-repetition': r.repetition },
    h('div', { class: 'case-head' },
      h('h4', {}, r.case_id, h('span', { class: 'hint' }, ` · repetition ${r.repetition + 1}`)),
      h('span', { class: `verdict ${r.passed ? 'pass' : 'fail'}` }, r.passed ? 'Passed' : 'Failed')),
    r.error ? h('p', { class: 'error' }, r.error) : null,
    h('dl', { class: 'case-facts' }, (r.scores || []).map((s) => [
      h('dt', {}, s.evaluator),
      h('dd', {}, h('span', { class: `verdict ${s.passed ? 'pass' : 'fail'}` }, `score ${num(s.score)} · ${s.passed ? 'passed' : 'failed'}`),
        s.explanation ? h('span', { class: 'exp-why' }, s.explanation) : null)])),
    h('p', { class: 'exp-links' }, h('a', { href: `#/thread/${r.thread_id}`, class: 'exp-thread' }, `Open the thread of ${r.case_id}`),
      r.latency_ms ? h('span', { class: 'hint' }, ` · ${(r.latency_ms / 1000).toFixed(1)} s`) : null)))));
}

// drawCompare offers the dataset's other finished experiments as
// baselines and shows the comparison with the one picked.
async function drawCompare(el, e, n, fail) {
  clear(el);
  const others = (await api.json('GET', `/experiments?limit=100&dataset_id=${encodeURIComponent(e.dataset_id)}`))
    .filter((x) => x.experiment_id !== e.experiment_id && x.status === 'success');
  el.append(h('h3', {}, 'Compare'));
  if (!others.length) { el.append(h('p', { class: 'hint' }, 'No other finished experiment of this dataset to compare with.')); return; }
  const id = uid('cmp');
  const pick = h('select', { id }, others.map((x) => h('option', { value: x.experiment_id, selected: x.experiment_id === e.baseline_experiment_id },
    optionLabel(x, n))));
  const go = h('button', { type: 'submit', class: 'small' }, 'Compare');
  const out = h('div', { class: 'exp-comparison', 'aria-live': 'polite' });
  const form = h('form', { class: 'ds-bar exp-compare-form' }, h('label', { for: id }, 'Baseline'), pick, go);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    go.disabled = true;
    try {
      drawComparison(out, await api.json('GET', `/experiments/${e.experiment_id}/compare?baseline=${encodeURIComponent(pick.value)}`));
    } catch (err) { fail(err); } finally { go.disabled = false; }
  });
  el.append(form, out);
  // An experiment started against a baseline is shown compared with it.
  if (others.some((x) => x.experiment_id === e.baseline_experiment_id)) form.requestSubmit();
}

function drawComparison(el, c) {
  clear(el);
  const d = c.mean_delta;
  const sign = (x) => (x > 0 ? `+${num(x)}` : num(x).replace('-', '−'));
  // A p-value of 0 means no resample crossed 0: say it is below 1/resamples.
  const p = c.p_value > 0 || !c.resamples ? `p = ${c.p_value < 0.01 ? c.p_value.toPrecision(2) : num(c.p_value)}` : `p < ${1 / c.resamples}`;
  el.append(h('p', { class: 'exp-verdict' },
    `Mean score change ${sign(d.value)} (95% ${sign(d.low)} to ${sign(d.high)}), ${p}: `,
    h('strong', {}, c.significant ? 'significant' : 'not significant'),
    ` · ${(c.regressions || []).length} ${(c.regressions || []).length === 1 ? 'regression' : 'regressions'}, ${(c.improvements || []).length} ${(c.improvements || []).length === 1 ? 'improvement' : 'improvements'}`));
  const pf = (p) => (p ? 'pass' : 'fail');
  el.append(h('table', { class: 'datasets-table exp-cmp-table' },
    h('caption', { class: 'visually-hidden' }, 'Cases against the baseline'),
    h('thead', {}, h('tr', {}, ['Case', 'Baseline', 'This', 'Change'].map((x) => h('th', { scope: 'col' }, x)))),
    h('tbody', {}, (c.cases || []).map((x) => h('tr', { 'data-case': x.id, class: x.change || null },
      h('td', {}, x.id), h('td', {}, `${pf(x.base_pass)} ${num(x.base_score)}`), h('td', {}, `${pf(x.pass)} ${num(x.score)}`),
      h('td', { class: 'exp-change' }, x.change || 'same'))))));
  for (const [label, ids] of [['Only in this experiment', c.only_current], ['Only in the baseline', c.only_baseline]]) {
    if ((ids || []).length) el.append(h('p', { class: 'hint' }, `${label}: ${ids.join(', ')}`));
  }
}

// ---- start one from a dataset ------------------------------------------------

/** runForm is the "Run an experiment" control of a dataset's view: it opens
 * a form (assistant, repetitions, optional baseline) that starts one and
 * goes to it. */
export function runForm(ds, fail) {
  const open = h('button', { type: 'button', class: 'small primary' }, 'Run an experiment');
  const box = h('div', { class: 'exp-run' });
  open.addEventListener('click', async () => {
    try {
      const [as, prev] = await Promise.all([api.json('POST', '/assistants/search', { limit: 100 }),
        api.json('GET', `/experiments?limit=100&dataset_id=${encodeURIComponent(ds.dataset_id)}`)]);
      clear(box).append(form(ds, as, prev.filter((x) => x.status === 'success'), () => { clear(box); open.hidden = false; open.focus(); }));
      open.hidden = true;
      box.querySelector('select').focus();
    } catch (err) { fail(err); }
  });
  return { open, box };
}

// versionsOf lists an assistant's versions, newest first.
const versionsOf = (id) => api.json('POST', `/assistants/${encodeURIComponent(id)}/versions`, { limit: 100 });

function form(ds, assistants, prev, close) {
  const f = (label, control, hint) => {
    const id = uid('xf');
    control.id = id;
    const err = h('span', { class: 'field-error', id: `${id}-err` });
    control.setAttribute('aria-describedby', `${id}-err`);
    return { el: h('div', { class: 'field' }, h('label', { for: id }, label), hint ? h('span', { class: 'hint' }, hint) : null, control, err), err, control };
  };
  const byID = new Map(assistants.map((a) => [a.assistant_id, a]));
  const who = f('Assistant', h('select', { class: 'exp-who' }, assistants.map((a) => h('option', { value: a.assistant_id }, nameOf(a)))));
  const ver = f('Version', h('select', { class: 'exp-version' }), 'The assistant version its runs use.');
  const name = f('Name (optional)', h('input', { type: 'text', autocomplete: 'off', maxlength: '200' }), 'Shown in the list; the server names it when left empty.');
  const reps = f('Repetitions', h('input', { type: 'number', min: '1', max: '100', value: '1', inputmode: 'numeric', required: true }), 'Each case runs this many times, on fresh threads (1–100).');
  const base = f('Baseline (optional)', h('select', { class: 'exp-base' }, h('option', { value: '' }, 'None'),
    prev.map((x) => h('option', { value: x.experiment_id }, `${x.name || x.experiment_id.slice(0, 8)} · ${passRate(x)}`))));
  const twin = f('Compare with (optional)', h('select', { class: 'exp-twin' }),
    'Also runs another version of the assistant, or another assistant, on the same cases, and opens the two side by side.');
  const problem = h('p', { class: 'error', role: 'alert', hidden: true });
  const go = h('button', { type: 'submit', class: 'primary' }, 'Start the experiment');
  const el = h('form', { class: 'case-form exp-run-form', novalidate: true, 'aria-label': `Run an experiment on ${ds.name}` },
    who.el, ver.el, name.el, reps.el, base.el, twin.el, problem,
    h('div', { class: 'actions' }, go, h('button', { type: 'button', onclick: close }, 'Cancel')));
  // The chosen assistant's versions fill Version and the versions part of
  // Compare with; the other assistants fill its other part.
  let filling = null; // the assistant whose versions fill the form
  const fill = async () => {
    const id = who.control.value;
    if (id === filling) return; // filled or being filled already
    filling = id;
    const a = byID.get(id);
    let vs = [];
    try { vs = id ? await versionsOf(id) : []; } catch (err) { problem.textContent = err.message; problem.hidden = false; }
    if (filling !== id) return; // changed again meanwhile
    clear(ver.control).append(h('option', { value: '' }, 'Latest'),
      ...vs.map((v) => h('option', { value: String(v.version) }, `Version ${v.version}${v.version === a.version ? ' (latest)' : ''}`)));
    const others = assistants.filter((x) => x.assistant_id !== id);
    clear(twin.control).append(...[h('option', { value: '' }, 'Nothing'),
      vs.length > 1 ? h('optgroup', { label: `Another version of ${nameOf(a)}` },
        vs.map((v) => h('option', { value: `${id}\n${v.version}` }, `${nameOf(a)} version ${v.version}`))) : null,
      others.length ? h('optgroup', { label: 'Another assistant' },
        others.map((x) => h('option', { value: `${x.assistant_id}\n` }, `${nameOf(x)} (latest)`))) : null].filter(Boolean));
    el.dataset.ready = id;
  };
  who.control.addEventListener('change', fill);
  fill();
  // label names an assistant and version for the experiments' names.
  const label = (id, v) => `${byID.has(id) ? nameOf(byID.get(id)) : id} ${v ? `v${v}` : 'latest'}`;
  el.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    reps.err.textContent = '';
    reps.control.removeAttribute('aria-invalid');
    problem.hidden = true;
    const r = Number(reps.control.value);
    if (!Number.isInteger(r) || r < 1 || r > 100) {
      reps.err.textContent = 'A whole number from 1 to 100.';
      reps.control.setAttribute('aria-invalid', 'true');
      reps.control.focus();
      return;
    }
    const bodyOf = { dataset_id: ds.dataset_id, dataset_version: ds.version, assistant_id: who.control.value, repetitions: r };
    if (ver.control.value) bodyOf.assistant_version = Number(ver.control.value);
    if (base.control.value) bodyOf.baseline_experiment_id = base.control.value;
    if (name.control.value.trim()) bodyOf.name = name.control.value.trim();
    // The second of a pair runs with the first as its baseline, so its
    // view is the comparison of the two.
    let second = null;
    if (twin.control.value) {
      const [id, v] = twin.control.value.split('\n');
      const prefix = name.control.value.trim() || ds.name;
      second = { dataset_id: ds.dataset_id, dataset_version: ds.version, assistant_id: id, repetitions: r, name: `${prefix} · ${label(id, v)}` };
      if (v) second.assistant_version = Number(v);
      bodyOf.name = `${prefix} · ${label(bodyOf.assistant_id, bodyOf.assistant_version)}`;
      if (second.name === bodyOf.name) {
        twin.err.textContent = 'Pick another version or assistant than the first.';
        twin.control.setAttribute('aria-invalid', 'true');
        twin.control.focus();
        return;
      }
    }
    twin.err.textContent = '';
    twin.control.removeAttribute('aria-invalid');
    go.disabled = true;
    let first = null;
    try {
      first = await api.json('POST', '/experiments', bodyOf);
      let open = first;
      if (second) {
        second.baseline_experiment_id = first.experiment_id;
        open = await api.json('POST', '/experiments', second);
      }
      location.hash = `#/experiments/${open.experiment_id}`;
    } catch (err) {
      problem.textContent = first ? `${first.name} started, but the experiment to compare with did not: ${err.message}` : err.message;
      problem.hidden = false;
    } finally { go.disabled = false; }
  });
  return el;
}
