// interrupts.js — cards for what a run waits on: questions (free text, a
// choice, several choices, a form), plan reviews and tool approvals. Each
// card is built from the interrupt's value (the app's payload) and its
// response_schema (what the server accepts), and answers through send(),
// which resumes the run; a refusal (4xx problem) is shown on the card.

import { h, uid } from './dom.js';
import { buildForm, fieldsOf, objectSchema } from './form.js';
import { toolApproval } from './approvals.js';
import { planReview } from './plan.js';

/** renderInterrupt returns the card for an interrupt {id, value, schema};
 * send(value) resumes the run with the answer and rejects with an
 * ApiError when the server refuses it. together, for a tool approval
 * among several, registers its decision to send with the others
 * (approvals.js). */
export function renderInterrupt(intr, send, together) {
  const v = intr.value && typeof intr.value === 'object' ? intr.value : { question: intr.value };
  const schema = intr.response_schema || intr.schema || null;
  const titleId = uid('card');
  const status = h('div', { class: 'card-problem', role: 'alert' });
  const card = h('section', { class: 'card interrupt', 'aria-labelledby': titleId, 'data-kind': v.kind || 'question' });

  // submit sends an answer, disables the card while it travels, and shows
  // the server's verdict (naming the field) if it refuses.
  let busy = false;
  async function submit(value, form) {
    if (busy) return;
    busy = true;
    status.textContent = '';
    card.classList.add('sending');
    try {
      await send(value);
      card.classList.add('answered');
    } catch (e) {
      const fields = form && e.problem ? fieldErrors(e.problem) : {};
      if (form) form.showErrors(fields);
      status.textContent = Object.keys(fields).length
        ? 'The server refused this answer: see the marked fields.'
        : `The server refused this answer: ${shorten(e.message, 600)}`;
    } finally {
      busy = false;
      card.classList.remove('sending');
    }
  }

  const again = [].concat(v.problem || [], v.problems || []);
  const head = [
    h('h3', { id: titleId }, headline(v)),
    again.length ? h('p', { class: 'card-again' }, 'Asked again: ', again.join(' ')) : null,
  ];
  let body;
  if (v.kind === 'planexec_plan_review') body = planReview(v, submit);
  else if (v.kind === 'tool_approval') body = toolApproval(v, submit, together);
  else body = question(v, schema, submit);
  card.append(...head.filter(Boolean), body, status);
  return card;
}

function shorten(text, n) {
  return text.length > n ? `${text.slice(0, n)}…` : text;
}

function headline(v) {
  if (v.kind === 'planexec_plan_review') return 'Review the plan';
  if (v.kind === 'tool_approval') return `Approve ${v.tool}?`;
  return v.question || 'The agent asks';
}

// fieldErrors maps a problem's errors to form fields: by a pointer into
// the answer (/command/resume/<key>), or, for a pointer at the answer as a
// whole, by the schema paths its detail names (".../properties/<key>").
function fieldErrors(problem) {
  const out = {};
  for (const e of problem.errors || []) {
    const m = /^\/command\/resume\/(?:values\/)?([^/]+)/.exec(e.pointer || '');
    if (m) {
      out[decodeURIComponent(m[1])] = e.detail;
      continue;
    }
    for (const p of String(e.detail || '').matchAll(/\/properties\/([^/:\s]+)(?:\/[^:\s]*)?: ([^\n]+)/g)) {
      out[p[1]] = out[p[1]] || p[2].replace(/; expected: .*$/, '');
    }
  }
  return out;
}

// question renders a question by the shape of its answer: a form for an
// object, buttons for one choice, checkboxes for several, a yes/no pair,
// or free text.
function question(v, schema, submit) {
  const obj = v.mode === 'form' || (!v.mode && objectSchema(schema) && !v.options) ? objectSchema(schema) : null;
  if (obj) return formQuestion(v, obj, submit);
  const arr = findBranch(schema, (s) => s.type === 'array' && s.items && s.items.enum);
  if (arr) return multiChoice(arr.items.enum, arr, submit);
  const options = v.options || findBranch(schema, (s) => Array.isArray(s.enum))?.enum;
  if (options && options.length) return singleChoice(options, submit);
  if (findBranch(schema, (s) => s.type === 'boolean') && !findBranch(schema, (s) => s.type === 'string')) {
    return h('div', { class: 'actions' },
      h('button', { type: 'button', class: 'primary', onclick: () => submit(true) }, 'Yes'),
      h('button', { type: 'button', onclick: () => submit(false) }, 'No'));
  }
  return freeText(submit);
}

function findBranch(schema, pred) {
  if (!schema || typeof schema !== 'object') return null;
  if (pred(schema)) return schema;
  for (const b of schema.anyOf || schema.oneOf || []) {
    const f = findBranch(b, pred);
    if (f) return f;
  }
  return null;
}

function singleChoice(options, submit) {
  return h('div', { class: 'actions choices', role: 'group', 'aria-label': 'Choices' },
    options.map((o) => h('button', { type: 'button', class: 'choice', onclick: () => submit(o) }, String(o))));
}

function multiChoice(options, s, submit) {
  const f = fieldsOf({ properties: { choice: s }, required: s.minItems ? ['choice'] : [] })[0];
  f.label = s.minItems ? 'Choose one or more' : 'Choose any';
  const form = buildForm([f]);
  return h('form', { class: 'answer', novalidate: true, onsubmit: (e) => {
    e.preventDefault();
    const { values, errors } = form.read();
    form.showErrors(errors);
    if (Object.keys(errors).length) return form.focusFirstError();
    submit(values.choice || [], form);
  } }, form.el, h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Send')));
}

function freeText(submit) {
  const id = uid('t');
  const err = h('p', { class: 'field-error', role: 'alert' });
  const ta = h('textarea', { id, rows: 3, required: true });
  return h('form', { class: 'answer', novalidate: true, onsubmit: (e) => {
    e.preventDefault();
    if (!ta.value.trim()) { err.textContent = 'Write an answer first.'; ta.focus(); return; }
    err.textContent = '';
    submit(ta.value);
  } }, h('label', { for: id }, 'Your answer'), ta, err,
  h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Send')));
}

function formQuestion(v, obj, submit) {
  const form = buildForm(fieldsOf(obj, v.fields || []));
  return h('form', { class: 'answer', novalidate: true, onsubmit: (e) => {
    e.preventDefault();
    const { values, errors } = form.read();
    form.showErrors(errors);
    if (Object.keys(errors).length) return form.focusFirstError();
    submit(values, form);
  } }, form.el, h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Send')));
}
