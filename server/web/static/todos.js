// todos.js — a deep agent's to-do list (agent/deep: the thread state key
// "todos", items {content, status}), shown as a compact card above the
// conversation. Each status has an icon and a word, so it never rests on
// colour alone. The list follows the run live (every values event holds
// the whole state) and comes back from the thread's state after a reload.

import { clear, h } from './dom.js';

// The statuses agent/deep writes, with how the page says them.
const STATUS = {
  pending: { icon: '○', text: 'To do' },
  in_progress: { icon: '◐', text: 'In progress' },
  completed: { icon: '✓', text: 'Done' },
};

let root = null;
let list = null;
let count = null;

/** mount builds the card inside el (hidden until a state holds to-dos). */
export function mount(el) {
  list = h('ol', { class: 'todo-list' });
  count = h('span', { class: 'work-count' });
  root = h('details', { class: 'work-part todos', open: true },
    h('summary', {}, h('span', { class: 'work-title' }, 'To-do list'), ' ', count), list);
  root.hidden = true;
  el.append(root);
}

/** todosOf returns the valid to-do items of a state's values, or null
 * when the state has none (not a deep agent's thread). */
export function todosOf(values) {
  const t = values && values.todos;
  if (!Array.isArray(t)) return null;
  return t.filter((x) => x && typeof x.content === 'string').map((x) => ({ content: x.content, status: STATUS[x.status] ? x.status : 'pending' }));
}

/** show draws the to-dos of a thread's state values (null hides the
 * card). The card's open or folded state is the person's and is kept. */
export function show(values) {
  if (!root) return;
  const todos = todosOf(values);
  root.hidden = !todos || todos.length === 0;
  if (root.hidden) { clear(list); return; }
  const done = todos.filter((t) => t.status === 'completed').length;
  count.textContent = `${done} of ${todos.length} done`;
  clear(list).append(...todos.map((t) => {
    const s = STATUS[t.status];
    return h('li', { class: `todo ${t.status}`, 'data-status': t.status },
      h('span', { class: 'todo-icon', 'aria-hidden': 'true' }, s.icon),
      h('span', { class: 'todo-text' }, t.content),
      h('span', { class: 'todo-status' }, s.text));
  }));
}
