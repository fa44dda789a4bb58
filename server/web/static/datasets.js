// datasets.js — evaluation datasets in the page: the Datasets view (#/datasets
// lists them with their version and case count, #/datasets/{id} shows one
// dataset's cases with their input, answers and expectations, deletes a
// case, exports the JSONL trellis eval reads) and the dialog that adds the
// open thread to a dataset as a case (GET /threads/{id}/case records it;
// the person edits the expectations before saving).

import * as api from './api.js';
import { clear, h, uid } from './dom.js';
import { runForm } from './experiments.js';

let view = null; // the view's section
let dialog = null; // the add-to-dataset dialog

const pretty = (v) => (typeof v === 'string' ? v : JSON.stringify(v, null, 2));

/** mount wires the view and the dialog. */
export function mount(els) {
  view = els.view;
  dialog = els.dialog;
}

/** show draws the list (id null) or one dataset, and reports failures. */
export async function show(id) {
  clear(view);
  const title = h('h2', { id: 'datasets-title', tabindex: '-1' }, 'Datasets');
  const head = h('header', { class: 'datasets-head' }, title, h('a', { href: '#/new', class: 'back' }, 'Back to the chat'));
  const body = h('div', { class: 'datasets-body' });
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
  const list = await api.json('POST', '/datasets/search', { limit: 100 });
  if (!list.length) {
    body.append(h('p', { class: 'hint' }, 'No datasets yet. Open a thread and use “Add to dataset” to record it as a case.'));
    return;
  }
  body.append(h('table', { class: 'datasets-table' },
    h('caption', { class: 'visually-hidden' }, 'Datasets, newest first'),
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Name'), h('th', { scope: 'col' }, 'Version'), h('th', { scope: 'col' }, 'Cases'))),
    h('tbody', {}, list.map((d) => h('tr', { 'data-dataset': d.dataset_id },
      h('td', {}, h('a', { href: `#/datasets/${d.dataset_id}` }, d.name), d.description ? h('span', { class: 'hint ds-about' }, d.description) : null),
      h('td', {}, String(d.version)), h('td', {}, String(d.case_count)))))));
}

async function showOne(id, title, head, body, fail) {
  const [ds, cs] = await Promise.all([api.json('GET', `/datasets/${id}`), api.json('GET', `/datasets/${id}/cases`)]);
  title.textContent = ds.name;
  const all = h('a', { href: '#/datasets' }, 'All datasets');
  head.querySelector('.back').before(all);
  const facts = h('p', { class: 'ds-facts' }, `Version ${ds.version} · ${ds.case_count} ${ds.case_count === 1 ? 'case' : 'cases'}`);
  const exp = h('button', { type: 'button', class: 'small', onclick: () => exportJSONL(ds).catch(fail) }, 'Export JSONL');
  const run = runForm(ds, fail);
  body.append(h('div', { class: 'ds-bar' }, facts, exp, run.open), run.box);
  if (ds.description) body.append(h('p', { class: 'hint' }, ds.description));
  if (!cs.cases.length) body.append(h('p', { class: 'hint' }, 'No cases.'));
  const list = h('ol', { class: 'cases' });
  for (const c of cs.cases) list.append(caseNode(ds, c, fail));
  body.append(list);
}

// caseNode shows one case: its input, answers and expectations.
function caseNode(ds, c, fail) {
  const e = c.expect || {};
  const rows = [];
  const row = (label, ...value) => rows.push(h('dt', {}, label), h('dd', {}, ...value));
  if (c.input && c.input.message) row('Input', c.input.message);
  else if (c.input && c.input.state) row('Input state', h('pre', {}, pretty(c.input.state)));
  if (c.user) row('Simulated user', `${c.user.persona || ''} — goal: ${c.user.goal}`);
  if ((c.answers || []).length) {
    row('Answers', h('ol', { class: 'case-answers' }, c.answers.map((a) => h('li', {},
      a.kind ? h('code', {}, a.kind) : null, a.kind ? ' ' : null, h('span', { class: 'answer-value' }, pretty(a.value))))));
  }
  for (const t of c.turns || []) row('Then', t.message);
  if (e.output !== undefined) row('Expected output', h('pre', { class: 'expect-output' }, pretty(e.output)));
  if ((e.tool_calls || []).length) row('Expected tool calls', h('ol', {}, e.tool_calls.map((t) => h('li', {}, h('code', {}, t.name), t.args ? ` ${JSON.stringify(t.args)}` : ''))));
  if (e.rubric) row('Rubric', e.rubric);
  const del = h('button', { type: 'button', class: 'small danger', 'aria-label': `Delete the case ${c.id}` }, 'Delete');
  // Deleting asks first, in place: the question and its two answers.
  const yes = h('button', { type: 'button', class: 'small danger' }, 'Delete it');
  const no = h('button', { type: 'button', class: 'small' }, 'Keep it');
  const ask = h('div', { class: 'case-confirm', role: 'group', 'aria-label': `Delete the case ${c.id}?`, hidden: true },
    h('span', {}, `Delete “${c.id}”? This makes a new version of ${ds.name}.`), yes, no);
  del.addEventListener('click', () => { ask.hidden = false; del.hidden = true; no.focus(); });
  no.addEventListener('click', () => { ask.hidden = true; del.hidden = false; del.focus(); });
  yes.addEventListener('click', async () => {
    try {
      await api.request('DELETE', `/datasets/${ds.dataset_id}/cases/${encodeURIComponent(c.id)}`);
      await show(ds.dataset_id);
    } catch (err) { fail(err); }
  });
  const tags = (c.tags || []).length ? h('span', { class: 'hint' }, ` · ${c.tags.join(', ')}`) : null;
  return h('li', { class: 'case', 'data-case': c.id },
    h('div', { class: 'case-head' }, h('h3', {}, c.id, tags), del), ask, h('dl', { class: 'case-facts' }, rows));
}

// exportJSONL downloads the dataset as name.jsonl (fetched with the API key).
async function exportJSONL(ds) {
  const res = await api.request('GET', `/datasets/${ds.dataset_id}/export`);
  const url = URL.createObjectURL(await res.blob());
  const a = h('a', { href: url, download: `${ds.name}.jsonl`, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

// ---- add this thread to a dataset -----------------------------------------

const NEW = '__new__';

const slug = (s) => String(s || '').toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 48);

/** addThread opens the dialog for a thread: it records the thread as a
 * case and lets the person edit it and pick the dataset. */
export async function addThread(threadId, title) {
  clear(dialog);
  const status = h('p', { class: 'hint', role: 'status' }, 'Recording the thread…');
  dialog.append(h('h2', { id: 'case-title' }, 'Add this thread to a dataset'), status);
  if (!dialog.open) dialog.showModal();
  let c;
  let datasets;
  try {
    [c, datasets] = await Promise.all([api.json('GET', `/threads/${threadId}/case`), api.json('POST', '/datasets/search', { limit: 100 })]);
  } catch (e) {
    status.textContent = '';
    dialog.append(h('p', { class: 'error', role: 'alert' }, e.message),
      h('div', { class: 'actions' }, h('button', { type: 'button', onclick: () => dialog.close() }, 'Close')));
    return;
  }
  status.textContent = 'The case replays the thread: its first message and your answers. What the agent did is the expectation: edit it before saving.';
  dialog.append(caseForm(c, datasets, title));
  const first = dialog.querySelector('form input, form textarea');
  if (first) first.focus();
}

// field is a labelled control with room for its error.
function field(label, control, hint) {
  const id = uid('cf');
  control.id = id;
  const err = h('span', { class: 'field-error', id: `${id}-err` });
  control.setAttribute('aria-describedby', `${id}-err`);
  return { el: h('div', { class: 'field' }, h('label', { for: id }, label), hint ? h('span', { class: 'hint' }, hint) : null, control, err), err, control };
}

function caseForm(c, datasets, title) {
  const outputIsText = typeof (c.expect || {}).output === 'string' || (c.expect || {}).output === undefined;
  const id = field('Case ID', h('input', { type: 'text', value: slug(title) || c.id, autocomplete: 'off', required: true }));
  const out = field('Expected output', h('textarea', { rows: '4', class: 'expect-output' }, outputIsText ? (c.expect.output || '') : pretty(c.expect.output)),
    outputIsText ? 'The final answer evaluators compare with.' : 'The final state, as JSON.');
  const calls = field('Expected tool calls', h('textarea', { rows: '4', class: 'expect-calls' }, JSON.stringify((c.expect || {}).tool_calls || [], null, 2)), 'A JSON list of {"name", "args"}; [] for none.');
  const pick = field('Dataset', h('select', {},
    datasets.map((d) => h('option', { value: d.dataset_id }, `${d.name} (${d.case_count} cases)`)),
    h('option', { value: NEW, selected: !datasets.length }, 'A new dataset…')));
  const name = field('New dataset name', h('input', { type: 'text', autocomplete: 'off', value: slug(c.metadata && c.metadata.title) ? `${slug(c.metadata.title)}-cases` : '' }));
  const sync = () => { name.el.hidden = pick.control.value !== NEW; };
  pick.control.addEventListener('change', sync);
  sync();
  const answers = (c.answers || []).length
    ? h('ol', { class: 'case-answers' }, c.answers.map((a) => h('li', {}, a.kind ? h('code', {}, a.kind) : null, a.kind ? ' ' : null, h('span', { class: 'answer-value' }, pretty(a.value)))))
    : h('p', { class: 'hint' }, 'None: the thread asked nothing.');
  const done = h('div', { class: 'case-saved', role: 'status' });
  const problem = h('p', { class: 'error', role: 'alert', hidden: true });
  const save = h('button', { type: 'submit', class: 'primary' }, 'Save the case');
  const form = h('form', { class: 'case-form', novalidate: true },
    id.el,
    h('div', { class: 'field' }, h('span', { class: 'label' }, 'Input'), h('p', { class: 'case-input' }, c.input.message || pretty(c.input.state || {}))),
    h('div', { class: 'field' }, h('span', { class: 'label' }, 'Your answers'), answers),
    out.el, calls.el, pick.el, name.el, problem, done,
    h('div', { class: 'actions' }, save, h('button', { type: 'button', value: 'cancel', onclick: () => dialog.close() }, 'Cancel')));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    for (const f of [id, out, calls, name]) { f.err.textContent = ''; f.control.removeAttribute('aria-invalid'); }
    problem.hidden = true;
    const bad = (f, msg) => { f.err.textContent = msg; f.control.setAttribute('aria-invalid', 'true'); f.control.focus(); };
    const cs = structuredClone(c);
    cs.id = id.control.value.trim();
    if (!cs.id) { bad(id, 'Give the case an ID.'); return; }
    cs.expect = cs.expect || {};
    if (outputIsText) {
      if (out.control.value.trim()) cs.expect.output = out.control.value; else delete cs.expect.output;
    } else {
      try { cs.expect.output = JSON.parse(out.control.value); } catch (err) { bad(out, `Not JSON: ${err.message}`); return; }
    }
    try {
      const list = JSON.parse(calls.control.value || '[]');
      if (!Array.isArray(list) || list.some((x) => !x || typeof x.name !== 'string')) throw new Error('each call needs a "name"');
      if (list.length) cs.expect.tool_calls = list; else delete cs.expect.tool_calls;
    } catch (err) { bad(calls, `Not a list of calls: ${err.message}`); return; }
    let target = pick.control.value;
    save.disabled = true;
    try {
      let ds;
      if (target === NEW) {
        const n = name.control.value.trim();
        if (!n) { bad(name, 'Name the new dataset.'); return; }
        ds = await api.json('POST', '/datasets', { name: n, cases: [cs] });
        target = ds.dataset_id;
      } else {
        ds = await api.json('POST', `/datasets/${target}/cases`, { cases: [cs] });
      }
      clear(done).append(`Saved as “${cs.id}” in ${ds.name} (version ${ds.version}). `,
        h('a', { href: `#/datasets/${target}`, onclick: () => dialog.close() }, 'Open the dataset'));
      save.hidden = true;
    } catch (err) {
      problem.textContent = err.message;
      problem.hidden = false;
    } finally {
      save.disabled = false;
    }
  });
  return form;
}
