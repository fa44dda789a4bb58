// approvals.js — tool approval cards: the tool, whether it writes, its
// arguments; approve, edit the arguments (checked in the page against the
// tool's JSON schema, which the approval carries as "parameters"), or
// reject with a reason. When several calls wait at once (a model's
// parallel tool calls), the cards are compact: each has one decision
// control (approve, edit the arguments, reject — the editor or the reason
// opens under it when chosen) and one button under the cards sends the
// decisions made in one resume keyed by interrupt ID (a call left without
// a decision keeps waiting); "Approve all" above them is the shortcut.
//
// The answers are tool.Decision's: {action: "approve"}, {action: "edit",
// arguments: {...}} and {action: "reject", message}.

import { clear, h, uid } from './dom.js';
import { buildForm, fieldsOf, labelOf, objectSchema } from './form.js';

const KIND = 'tool_approval';

/** isApproval reports whether an interrupt is a tool approval. */
export function isApproval(intr) {
  return !!(intr && intr.value && intr.value.kind === KIND);
}

/** toolApproval returns the body of an approval card for the payload v;
 * submit(decision) resumes the run with it. With several approvals
 * pending, the card is compact and together(decide) registers its decision
 * to send with the others: decide() returns null (no decision), {decision}
 * or {problem} (the edited arguments do not fit, shown on the card);
 * together returns a function to call when the choice changes. */
export function toolApproval(v, submit, together) {
  const id = uid('why');
  const why = h('input', { id, type: 'text', name: 'reason' });
  const args = v.arguments && typeof v.arguments === 'object' ? v.arguments : {};
  if (together) return compactApproval(v, args, together);
  const editArea = h('div', { class: 'approval-edit' });
  let editor = null; // the open argument editor: {el, check}
  const open = (on) => {
    editBtn.setAttribute('aria-expanded', String(on));
    clear(editArea);
    editor = on ? argumentEditor(v.parameters, args, submit) : null;
    if (editor) editArea.append(editor.el);
  };
  const editBtn = h('button', { type: 'button', 'aria-expanded': 'false', onclick: () => {
    open(editBtn.getAttribute('aria-expanded') !== 'true');
    editArea.querySelector('input, select, textarea')?.focus();
  } }, 'Edit the arguments');
  const rejection = () => (why.value.trim() ? { action: 'reject', message: why.value.trim() } : { action: 'reject' });
  return h('div', { class: 'approval' },
    h('p', { class: 'approval-tool' }, 'Tool ', h('code', {}, v.tool), ' ',
      v.read_only ? h('span', { class: 'badge' }, 'reads only') : h('span', { class: 'badge writes' }, 'writes')),
    v.summary ? h('p', {}, v.summary) : null,
    h('p', { class: 'hint' }, 'It wants to run with:'),
    h('pre', { class: 'args' }, JSON.stringify(args, null, 2)),
    h('div', { class: 'actions' },
      h('button', { type: 'button', class: 'primary', onclick: () => submit({ action: 'approve' }) }, 'Approve'),
      editBtn),
    editArea,
    h('form', { class: 'answer', novalidate: true, onsubmit: (e) => {
      e.preventDefault();
      submit(rejection());
    } }, h('label', { for: id }, 'Reason (optional; the agent is told)'), why,
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'danger' }, 'Reject'))));
}

// compactApproval is a card of a group of approvals: the call and one
// decision control; choosing "edit" opens the argument editor, "reject"
// the reason. together(decide) registers the card's decision with the
// group (see approvalGroup).
function compactApproval(v, args, together) {
  const name = uid('together');
  const whyId = uid('why');
  const why = h('input', { id: whyId, type: 'text', name: 'reason' });
  const reason = h('div', { class: 'answer', hidden: true }, h('label', { for: whyId }, 'Reason (optional; the agent is told)'), why);
  const editArea = h('div', { class: 'approval-edit' });
  let editor = null;
  const choice = h('fieldset', { class: 'together decision' }, h('legend', {}, 'Decision'));
  const chosen = () => choice.querySelector('input:checked')?.value || '';
  const decide = () => {
    const c = chosen();
    if (c === 'approve') return { decision: { action: 'approve' } };
    if (c === 'reject') return { decision: why.value.trim() ? { action: 'reject', message: why.value.trim() } : { action: 'reject' } };
    if (c === 'edit') {
      const out = editor.check();
      return out ? { decision: { action: 'edit', arguments: out } } : { problem: `the edited arguments of ${v.tool} need fixing` };
    }
    return null;
  };
  decide.chosen = () => !!chosen();
  const changed = together(decide);
  const pick = () => {
    const c = chosen();
    reason.hidden = c !== 'reject';
    if (c === 'edit' && !editor) {
      editor = argumentEditor(v.parameters, args, null);
      editArea.append(editor.el);
    }
    editArea.hidden = c !== 'edit';
    changed();
  };
  for (const [value, text] of [['approve', 'Approve'], ['edit', 'Edit the arguments'], ['reject', 'Reject']]) {
    choice.append(h('label', { class: `seg seg-${value}` }, h('input', { type: 'radio', name, value, onchange: pick }), text));
  }
  return h('div', { class: 'approval compact', oninput: changed },
    h('p', { class: 'approval-tool' }, 'Tool ', h('code', {}, v.tool), ' ',
      v.read_only ? h('span', { class: 'badge' }, 'reads only') : h('span', { class: 'badge writes' }, 'writes')),
    v.summary ? h('p', {}, v.summary) : null,
    // The summary says what the call does; its arguments open on demand.
    h('details', { class: 'args-fold', open: !v.summary }, h('summary', {}, 'Arguments'), h('pre', { class: 'args' }, JSON.stringify(args, null, 2))),
    choice, reason, editArea);
}

// simple reports whether form.js can show every property of the schema as
// a field; a nested object or a free array needs the JSON editor.
function simple(obj) {
  return Object.values(obj.properties || {}).every((p) => {
    const t = Array.isArray(p.type) ? p.type.find((x) => x !== 'null') : p.type;
    if (t === 'array') return !!(p.items && p.items.enum);
    return ['string', 'number', 'integer', 'boolean'].includes(t) || Array.isArray(p.enum);
  });
}

// argumentEditor edits the arguments: a form from the tool's schema with
// the current values filled in when the schema is flat, else the JSON
// itself. Both are checked against the schema before the edit is sent.
// It returns {el, check}: check() marks the problems and returns the
// edited arguments, or null when they do not fit.
function argumentEditor(schema, args, submit) {
  const obj = objectSchema(schema);
  const err = h('div', { class: 'field-error', role: 'alert' });
  // Without submit (a card of a group) the edit is sent with the others;
  // Enter in the editor only checks it.
  const send = submit ? h('button', { type: 'submit', class: 'primary' }, 'Run with these arguments') : null;
  let check;
  let fields;
  if (obj && simple(obj)) {
    const withValues = { ...obj, properties: Object.fromEntries(Object.entries(obj.properties).map(([k, p]) => [k, k in args ? { ...p, default: args[k] } : p])) };
    // Labels from the schema's titles (else the key, as words); a string
    // argument that is one short line is edited in a one-line box.
    const oneLine = (x) => typeof x === 'string' && x.length <= 80 && !x.includes('\n');
    const form = buildForm(fieldsOf(withValues).map((f) => ({
      ...f,
      label: obj.properties[f.key].title || labelOf(f.key),
      line: f.kind === 'text' && (oneLine(args[f.key]) || (f.max !== undefined && f.max <= 120)),
    })));
    fields = [form.el];
    check = () => {
      const { values, errors } = form.read();
      // Keep arguments the form does not show (none, for a flat schema
      // that lists them all) and check the whole against the schema.
      const out = { ...Object.fromEntries(Object.entries(args).filter(([k]) => !(k in obj.properties))), ...values };
      for (const p of schemaProblems(obj, out)) if (p.key && !errors[p.key]) errors[p.key] = p.message;
      form.showErrors(errors);
      err.textContent = Object.keys(errors).length ? 'Fix the marked arguments first.' : '';
      if (Object.keys(errors).length) { form.focusFirstError(); return null; }
      return out;
    };
  } else {
    const id = uid('json');
    const ta = h('textarea', { id, rows: 6, class: 'mono', 'aria-describedby': `${id}-hint`, value: JSON.stringify(args, null, 2) });
    fields = [h('label', { for: id }, 'Arguments (JSON)'),
      h('p', { class: 'hint', id: `${id}-hint` }, 'Checked against the tool\'s schema before it is sent.'), ta];
    check = () => {
      let value;
      try {
        value = JSON.parse(ta.value);
      } catch (x) {
        err.textContent = `The arguments are not JSON: ${x.message}`;
        ta.setAttribute('aria-invalid', 'true');
        ta.focus();
        return null;
      }
      const probs = schema ? schemaProblems(schema, value) : [];
      err.textContent = probs.map((p) => p.message).join('\n');
      if (probs.length) { ta.setAttribute('aria-invalid', 'true'); ta.focus(); return null; }
      ta.removeAttribute('aria-invalid');
      return value;
    };
  }
  const el = h('form', { class: 'answer args-form', novalidate: true, onsubmit: (e) => {
    e.preventDefault();
    const out = check();
    if (out && submit) submit({ action: 'edit', arguments: out });
  } }, fields, err, send ? h('div', { class: 'actions' }, send) : null);
  return { el, check };
}

/** schemaProblems checks a value against the JSON Schema keywords tools
 * use (type, properties, required, additionalProperties: false, enum,
 * minimum/maximum, minLength/maxLength, pattern, items, minItems/maxItems,
 * anyOf, oneOf); each problem names the top-level key it is under. The server
 * checks the full schema again. */
export function schemaProblems(schema, value, path = '') {
  const out = [];
  const key = path.split('/')[1] || null;
  const say = (m) => out.push({ key, message: `${path || 'The arguments'}: ${m}` });
  if (!schema || typeof schema !== 'object') return out;
  for (const alt of [schema.anyOf, schema.oneOf]) {
    if (Array.isArray(alt) && !alt.some((b) => schemaProblems(b, value, path).length === 0)) say('fits none of the allowed forms');
  }
  const types = [].concat(schema.type || []);
  const typeOf = (x) => (x === null ? 'null' : Array.isArray(x) ? 'array' : Number.isInteger(x) ? 'integer' : typeof x);
  if (types.length && !types.some((t) => t === typeOf(value) || (t === 'number' && typeOf(value) === 'integer'))) {
    say(`must be ${types.join(' or ')}`);
    return out;
  }
  if (Array.isArray(schema.enum) && !schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) say(`must be one of ${schema.enum.map((e) => JSON.stringify(e)).join(', ')}`);
  if (typeof value === 'number') {
    if (schema.minimum !== undefined && value < schema.minimum) say(`must be at least ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) say(`must be at most ${schema.maximum}`);
  }
  if (typeof value === 'string') {
    const n = [...value].length;
    if (schema.minLength !== undefined && n < schema.minLength) say(`needs at least ${schema.minLength} characters`);
    if (schema.maxLength !== undefined && n > schema.maxLength) say(`takes at most ${schema.maxLength} characters`);
    if (typeof schema.pattern === 'string') {
      let re = null;
      try { re = new RegExp(schema.pattern, 'u'); } catch { /* a pattern JS cannot read: the server checks it */ }
      if (re && !re.test(value)) say(`must match ${schema.pattern}`);
    }
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) say(`needs at least ${schema.minItems} items`);
    if (schema.maxItems !== undefined && value.length > schema.maxItems) say(`takes at most ${schema.maxItems} items`);
    if (schema.items) value.forEach((x, i) => out.push(...schemaProblems(schema.items, x, `${path}/${i}`)));
  }
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    const props = schema.properties || {};
    for (const r of schema.required || []) if (!(r in value)) out.push({ key: path ? key : r, message: `${path}/${r}: is required` });
    for (const [k, x] of Object.entries(value)) {
      if (k in props) out.push(...schemaProblems(props[k], x, `${path}/${k}`));
      else if (schema.additionalProperties === false) out.push({ key: path ? key : k, message: `${path}/${k}: is not an argument of this tool` });
    }
  }
  return out;
}

/** approvalGroup returns the controls to answer several pending
 * approvals together, or null when fewer than two wait: {el} goes above
 * the cards (approve all, reject all), {footer} below them (send each
 * card's own decision), and register(id, decide) is a card's together
 * argument (see toolApproval). sendAll(map) resumes the run with a
 * decision per interrupt ID; a call left without a decision stays pending. */
export function approvalGroup(interrupts, sendAll) {
  const pending = interrupts.filter(isApproval);
  if (pending.length < 2) return null;
  const titleId = uid('all');
  const status = h('p', { class: 'card-problem', role: 'alert' });
  const deciders = new Map(); // interrupt ID -> decide()
  let busy = false;
  const send = async (map, where) => {
    if (busy) return;
    busy = true;
    status.textContent = '';
    footStatus.textContent = '';
    bar.classList.add('sending');
    footer.classList.add('sending');
    try {
      await sendAll(map);
    } catch (e) {
      where.textContent = `The server refused these answers: ${e.message}`;
    } finally {
      busy = false;
      bar.classList.remove('sending');
      footer.classList.remove('sending');
    }
  };
  const all = (decision) => send(Object.fromEntries(pending.map((i) => [i.id, decision])), status);
  const bar = h('section', { class: 'card approval-group', 'aria-labelledby': titleId },
    h('div', { class: 'group-head' },
      h('h3', { id: titleId }, `${pending.length} tool calls wait for you`),
      h('button', { type: 'button', class: 'small', onclick: () => all({ action: 'approve' }) }, `Approve all ${pending.length}`)),
    h('p', { class: 'hint' }, 'Choose a decision for each call, then send them together below.'),
    status);

  const count = h('p', { class: 'hint', 'aria-live': 'polite' });
  const footStatus = h('p', { class: 'card-problem', role: 'alert' });
  const sendBtn = h('button', { type: 'button', class: 'primary', onclick: () => {
    const map = {};
    for (const [iid, decide] of deciders) {
      const r = decide();
      if (r && r.problem) { footStatus.textContent = `Not sent: ${r.problem}.`; return; }
      if (r) map[iid] = r.decision;
    }
    if (!Object.keys(map).length) { footStatus.textContent = 'Choose a decision on at least one card first.'; return; }
    send(map, footStatus);
  } }, 'Send the decisions');
  const footer = h('section', { class: 'card approval-send', 'aria-label': 'Send the decisions together' },
    count, h('div', { class: 'actions' }, sendBtn), footStatus);
  const recount = () => {
    footStatus.textContent = '';
    let n = 0;
    for (const decide of deciders.values()) if (decided(decide)) n++;
    count.textContent = `${n} of ${pending.length} calls have a decision to send together.`;
    sendBtn.textContent = n ? `Send the ${n} decision${n === 1 ? '' : 's'}` : 'Send the decisions';
  };
  recount();
  return {
    el: bar,
    footer,
    register(iid, decide) {
      deciders.set(iid, decide);
      return recount;
    },
  };
}

// decided says whether a card has a decision chosen, without checking
// (and marking) its edited arguments.
function decided(decide) {
  return decide.chosen ? decide.chosen() : false;
}
