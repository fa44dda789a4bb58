// inputform.js — an assistant whose input is not a chat (its input schema
// has no messages key, like the testplanner's) starts its runs from a form
// built from that schema, in place of the message box. The fields are the
// interrupt forms' (form.js): labels from titles, required marks, a select
// for an enum, a number box for a number, JSON text for an object or a
// list. A chat assistant keeps the message box.

import * as api from './api.js';
import { clear, h } from './dom.js';
import { buildForm, fieldsOf, labelOf, objectSchema } from './form.js';

const schemas = new Map(); // assistant ID -> its input schema (a promise)

/** inputSchema reads (once per assistant) the assistant's input schema,
 * or null when the server has none. */
export function inputSchema(assistantId) {
  if (!schemas.has(assistantId)) {
    const p = api.json('GET', `/assistants/${assistantId}/schemas`).then((s) => (s && s.input_schema) || null);
    p.catch(() => schemas.delete(assistantId)); // ask again next time
    schemas.set(assistantId, p);
  }
  return schemas.get(assistantId);
}

/** formSchema is the object schema to build the input form from, or null
 * for a chat assistant (its input has messages) or an unknown input.
 * declared is the assistant's start declaration (metadata "input": a list
 * of {key, description}); when given, the form shows those keys only,
 * described as declared, not the graph's internal state keys. A key
 * without a title is labelled from its name. */
export function formSchema(schema, declared) {
  const o = objectSchema(schema);
  if (!o || 'messages' in o.properties) return null;
  const keys = Array.isArray(declared) && declared.length
    ? declared.filter((d) => d && d.key in o.properties)
    : Object.keys(o.properties).map((key) => ({ key }));
  const properties = {};
  for (const d of keys) {
    const p = { ...o.properties[d.key] };
    // The server describes undocumented keys by their reducer; that is
    // for a developer, not for a person filling in the form.
    if (typeof p.description === 'string' && p.description.startsWith('reducer: ')) delete p.description;
    if (d.description) p.description = d.description;
    if (!p.title) p.title = labelOf(d.key);
    properties[d.key] = p;
  }
  return { ...o, properties, required: (o.required || []).filter((k) => k in properties) };
}

/** mount shows in slot the form for an object schema (or nothing for
 * null) and returns a reader: read() gives the input object, or null after
 * marking the bad fields. */
export function mount(slot, schema) {
  clear(slot);
  if (!schema) return null;
  // Plain strings are single lines here (a name, an ID); JSON gets room.
  const form = buildForm(fieldsOf(schema).map((f) => (f.kind === 'text' ? { ...f, line: true } : f)));
  slot.append(h('h3', { class: 'input-title' }, 'Input of the run'), form.el);
  return {
    read() {
      const { values, errors } = form.read();
      form.showErrors(errors);
      if (Object.keys(errors).length) {
        form.focusFirstError();
        return null;
      }
      return values;
    },
  };
}
