// form.js — forms built from the JSON Schema an interrupt carries (the
// schema the server checks the answer against), checked in the page before
// they are sent, and the form that starts a run of an assistant whose
// input is not a chat (inputform.js). Supported fields: text, number (with
// limits), select, multi-select, yes/no, date and JSON (an object or a
// list, typed as JSON), with labels, descriptions, defaults and required
// marks.

import { h, uid } from './dom.js';

/** objectSchema returns the object branch of a schema (the schema itself,
 * or the first object branch of its anyOf/oneOf), or null. */
export function objectSchema(schema) {
  if (!schema || typeof schema !== 'object') return null;
  if (schema.type === 'object' && schema.properties) return schema;
  for (const b of schema.anyOf || schema.oneOf || []) {
    const o = objectSchema(b);
    if (o) return o;
  }
  return null;
}

/** labelOf turns a key ("schema_of_run") into a label ("Schema of run"),
 * for a field whose schema has no title. */
export function labelOf(key) {
  const t = String(key).replace(/[_-]+/g, ' ').trim();
  return t.charAt(0).toUpperCase() + t.slice(1);
}

/** fieldsOf describes the fields of an object schema, in the order of the
 * payload's own field list when it has one (JSON objects carry no order). */
export function fieldsOf(schema, payloadFields = []) {
  const props = schema.properties || {};
  const required = new Set(schema.required || []);
  const order = payloadFields.map((f) => f.key).filter((k) => k in props);
  for (const k of Object.keys(props)) if (!order.includes(k)) order.push(k);
  return order.map((key) => {
    const p = props[key] || {};
    const pf = payloadFields.find((f) => f.key === key) || {};
    const type = Array.isArray(p.type) ? p.type.find((t) => t !== 'null') : p.type;
    const f = {
      key, required: required.has(key),
      label: p.title || pf.label || key,
      description: p.description || pf.description || '',
      default: p.default ?? pf.default,
      kind: 'text',
    };
    if (type === 'array' && p.items && p.items.enum) {
      Object.assign(f, { kind: 'multi', options: p.items.enum, min: p.minItems, max: p.maxItems });
    } else if (p.enum) {
      Object.assign(f, { kind: 'select', options: p.enum });
    } else if (type === 'number' || type === 'integer') {
      Object.assign(f, { kind: 'number', integer: type === 'integer', min: p.minimum, max: p.maximum });
    } else if (type === 'boolean') {
      f.kind = 'boolean';
    } else if (type === 'object' || type === 'array') {
      f.kind = 'json';
    } else if (p.format === 'date') {
      f.kind = 'date';
    } else {
      Object.assign(f, { min: p.minLength, max: p.maxLength });
    }
    return f;
  });
}

/** buildForm renders the fields; read() returns {values, errors} with the
 * values typed as the schema wants and one message per bad field, and
 * showErrors(map) marks fields (also with the server's verdict). */
export function buildForm(fields) {
  const rows = fields.map((f) => fieldRow(f));
  const el = h('div', { class: 'fields' }, rows.map((r) => r.el));
  function showErrors(errors) {
    for (const r of rows) r.setError(errors[r.field.key] || '');
  }
  function read() {
    const values = {};
    const errors = {};
    for (const r of rows) {
      const { value, error } = r.read();
      if (error) errors[r.field.key] = error;
      else if (value !== undefined) values[r.field.key] = value;
    }
    return { values, errors };
  }
  return { el, read, showErrors, focusFirstError() { rows.find((r) => r.hasError())?.focus(); } };
}

// BAD_JSON is what a JSON field reads when its text does not parse.
const BAD_JSON = Symbol('bad JSON');

function fieldRow(f) {
  const id = uid('f');
  const errId = `${id}-err`;
  const descId = f.description ? `${id}-desc` : null;
  const described = [descId, errId].filter(Boolean).join(' ');
  const label = h('label', { for: id }, f.label, f.required ? h('span', { class: 'req', 'aria-hidden': 'true' }, ' *') : null);
  const desc = f.description ? h('p', { class: 'hint', id: descId }, f.description) : null;
  const err = h('p', { class: 'field-error', id: errId, role: 'alert' });
  let input;
  let read;
  let focusEl;
  switch (f.kind) {
    case 'select': {
      input = h('select', { id, name: f.key, required: f.required, 'aria-describedby': described },
        h('option', { value: '' }, f.required ? 'Choose…' : '(none)'),
        f.options.map((o) => h('option', { value: String(o), selected: o === f.default }, String(o))));
      read = () => (input.value === '' ? undefined : f.options.find((o) => String(o) === input.value));
      break;
    }
    case 'multi': {
      const boxes = f.options.map((o) => {
        const bid = uid('f');
        const cb = h('input', { type: 'checkbox', id: bid, name: f.key, value: String(o), checked: (f.default || []).includes(o) });
        return { o, cb, el: h('span', { class: 'check' }, cb, h('label', { for: bid }, String(o))) };
      });
      input = h('fieldset', { class: 'multi', 'aria-describedby': described },
        h('legend', {}, f.label, f.required ? ' *' : ''), boxes.map((b) => b.el));
      read = () => boxes.filter((b) => b.cb.checked).map((b) => b.o);
      focusEl = boxes[0]?.cb;
      break;
    }
    case 'boolean': {
      input = h('select', { id, name: f.key, 'aria-describedby': described },
        h('option', { value: '' }, '—'),
        h('option', { value: 'true', selected: f.default === true }, 'Yes'),
        h('option', { value: 'false', selected: f.default === false }, 'No'));
      read = () => (input.value === '' ? undefined : input.value === 'true');
      break;
    }
    case 'number': {
      input = h('input', { id, name: f.key, type: 'number', inputmode: 'decimal', step: f.integer ? '1' : 'any', min: f.min, max: f.max, value: f.default, 'aria-describedby': described });
      read = () => (input.value.trim() === '' ? undefined : Number(input.value));
      break;
    }
    case 'date': {
      input = h('input', { id, name: f.key, type: 'date', value: f.default, 'aria-describedby': described });
      read = () => input.value || undefined;
      break;
    }
    case 'json': {
      const text = f.default === undefined ? '' : JSON.stringify(f.default, null, 2);
      input = h('textarea', { id, name: f.key, rows: 3, class: 'mono', value: text, spellcheck: 'false', 'aria-describedby': described });
      read = () => {
        if (input.value.trim() === '') return undefined;
        try { return JSON.parse(input.value); } catch { return BAD_JSON; }
      };
      break;
    }
    default: {
      // A string of no stated length is a line when the form says so
      // (a run's input, inputform.js); an answer's free text gets room.
      const long = !f.line && (f.max === undefined || f.max > 120);
      input = h(long ? 'textarea' : 'input', { id, name: f.key, type: long ? null : 'text', rows: long ? 2 : null, maxlength: f.max, value: f.default, 'aria-describedby': described });
      read = () => (input.value.trim() === '' ? undefined : input.value);
    }
  }
  if (f.required && f.kind !== 'multi') input.setAttribute('aria-required', 'true');
  // A group of checkboxes is labelled by its legend, not a label.
  const el = h('div', { class: 'field' }, f.kind === 'multi' ? null : label, desc, input, err);
  const setError = (msg) => {
    err.textContent = msg;
    if (msg) input.setAttribute('aria-invalid', 'true'); else input.removeAttribute('aria-invalid');
  };
  return {
    field: f, el, setError,
    hasError: () => err.textContent !== '',
    focus: () => (focusEl || input).focus(),
    read() {
      const value = read();
      return { value, error: check(f, value, input) };
    },
  };
}

/** check returns what is wrong with a field's value, or ''. */
export function check(f, v, input) {
  const empty = v === undefined || (Array.isArray(v) && v.length === 0);
  if (empty) return f.required ? `${f.label} is required.` : '';
  switch (f.kind) {
    case 'number':
      if (!Number.isFinite(v) || (input && input.validity && input.validity.badInput)) return `${f.label} must be a number.`;
      if (f.integer && !Number.isInteger(v)) return `${f.label} must be a whole number.`;
      if (f.min !== undefined && v < f.min) return `${f.label} must be at least ${f.min}.`;
      if (f.max !== undefined && v > f.max) return `${f.label} must be at most ${f.max}.`;
      return '';
    case 'text':
      if (f.min !== undefined && v.length < f.min) return `${f.label} needs at least ${f.min} characters.`;
      if (f.max !== undefined && v.length > f.max) return `${f.label} takes at most ${f.max} characters.`;
      return '';
    case 'date':
      return /^\d{4}-\d{2}-\d{2}$/.test(v) ? '' : `${f.label} must be a date (YYYY-MM-DD).`;
    case 'json':
      return v === BAD_JSON ? `${f.label} must be JSON (an object {…} or a list […]).` : '';
    case 'multi':
      if (f.min !== undefined && v.length < f.min) return `Choose at least ${f.min}.`;
      if (f.max !== undefined && v.length > f.max) return `Choose at most ${f.max}.`;
      return '';
    default:
      return '';
  }
}
