// plan.js — the plan review card: the steps as a list and as a small
// dependency graph (dag.js); confirm; edit the plan in place (add, remove,
// reorder, change the text and the dependencies of steps), checked in the
// page before it is sent; or reject it with a comment so the agent plans
// again.
//
// The answers are the ones agent/planexec accepts for a plan review:
// {action: "approve"}, {action: "edit", plan: {task, steps: [{id, title,
// description, done_when, depends_on}], replan}} and {action: "reject",
// feedback}. The server checks an edited plan again and, when it cannot
// run, asks anew with the problem (shown by the card as "Asked again").

import { clear, h, uid } from './dom.js';
import { renderDag } from './dag.js';
import { setMarkdown } from './markdown.js';

/** planReview returns the body of a plan review card for the payload v
 * ({kind, plan, problem}); submit(answer) resumes the run. */
export function planReview(v, submit) {
  const plan = v.plan || {};
  const steps = plan.steps || [];
  const root = h('div', { class: 'plan' });
  const show = () => { clear(root).append(...viewMode(plan, steps, submit, edit)); };
  // Discarding an edit puts the focus back where the edit began.
  const discard = () => { show(); root.querySelector('.plan-edit-open')?.focus(); };
  const edit = () => {
    clear(root).append(editor(plan, submit, discard));
    root.querySelector('.plan-edit input')?.focus();
  };
  show();
  return root;
}

// viewMode shows the plan with its three ways out.
function viewMode(plan, steps, submit, edit) {
  const titles = Object.fromEntries(steps.map((s) => [s.id, s.title || s.id]));
  const task = h('div', { class: 'plan-task' });
  setMarkdown(task, plan.task || '');
  const list = h('ol', { class: 'plan-steps' }, steps.map((s) => h('li', { 'data-step': s.id },
    h('strong', {}, s.title || s.id),
    s.description ? h('p', {}, s.description) : null,
    s.done_when ? h('p', { class: 'hint' }, 'Done when ', s.done_when) : null,
    (s.depends_on || []).length ? h('p', { class: 'deps' }, 'After: ', s.depends_on.map((d) => titles[d] || d).join(', ')) : null)));
  const id = uid('fb');
  const err = h('p', { class: 'field-error', role: 'alert' });
  const fb = h('textarea', { id, rows: 2, 'aria-describedby': `${id}-hint` });
  const reject = (e) => {
    e.preventDefault();
    if (!fb.value.trim()) { err.textContent = 'Say what to change, so the agent can plan again.'; fb.focus(); return; }
    err.textContent = '';
    submit({ action: 'reject', feedback: fb.value.trim() });
  };
  return [task,
    h('div', { class: 'plan-views' }, list, h('figure', { class: 'dag-wrap' }, renderDag(steps))),
    h('div', { class: 'actions' },
      h('button', { type: 'button', class: 'primary', onclick: () => submit({ action: 'approve' }) }, 'Confirm the plan'),
      h('button', { type: 'button', class: 'plan-edit-open', onclick: edit }, 'Edit the plan')),
    h('form', { class: 'answer', novalidate: true, onsubmit: reject },
      h('label', { for: id }, 'Or change it'),
      h('p', { class: 'hint', id: `${id}-hint` }, 'The agent plans again following your comment.'),
      fb, err, h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Reject and re-plan')))];
}

// A step being edited: k is a key that never changes (dependencies point
// at it), so a step may be renamed or moved without losing its links.
let nextKey = 0;
function draftOf(plan) {
  const keys = new Map();
  const drafts = (plan.steps || []).map((s) => {
    nextKey += 1;
    keys.set(s.id, nextKey);
    return { k: nextKey, id: s.id || '', title: s.title || '', description: s.description || '', done_when: s.done_when || '', deps: [], rawDeps: s.depends_on || [], replan: (plan.replan || []).includes(s.id) };
  });
  // A dependency on an unknown step stays as its ID, so the check below
  // names it instead of silently dropping it.
  for (const d of drafts) d.deps = d.rawDeps.map((id) => keys.get(id) ?? id);
  return drafts;
}

/** problems checks an edited plan as planexec will: at least one step,
 * every step with a title and a unique, non-empty ID, dependencies only on
 * other steps of the plan and no cycle. Each problem names its step (k)
 * and field. */
export function problems(drafts) {
  const out = [];
  const add = (d, field, message) => out.push({ k: d ? d.k : null, field, message });
  if (!drafts.length) add(null, null, 'The plan has no steps; add at least one.');
  const byKey = new Map(drafts.map((d) => [d.k, d]));
  const seen = new Map();
  drafts.forEach((d, i) => {
    const name = d.title.trim() || `step ${i + 1}`;
    if (!d.title.trim()) add(d, 'title', `Step ${i + 1} has no title.`);
    const id = d.id.trim();
    if (!id) add(d, 'id', `"${name}" has no ID.`);
    else if (seen.has(id)) add(d, 'id', `"${name}" has the ID "${id}" of another step; IDs must be unique.`);
    else if (!/^[\w.-]+$/.test(id)) add(d, 'id', `"${name}": an ID takes letters, digits, "_", "-" and "." only.`);
    seen.set(id, d);
    for (const dep of d.deps) {
      if (dep === d.k) add(d, 'deps', `"${name}" depends on itself.`);
      else if (!byKey.has(dep)) add(d, 'deps', `"${name}" depends on "${dep}", which is not a step of the plan.`);
    }
  });
  const cycle = findCycle(drafts, byKey);
  if (cycle) {
    add(cycle[0], 'deps', `${cycle.map((d) => `"${d.title.trim() || d.id}"`).join(' → ')} wait for each other in a cycle, so none could start; untick one of these dependencies.`);
  }
  return out;
}

function findCycle(drafts, byKey) {
  const state = new Map(); // 1 open, 2 done
  const path = [];
  const visit = (d) => {
    state.set(d.k, 1);
    path.push(d);
    for (const dep of d.deps) {
      const t = byKey.get(dep);
      if (!t || t === d) continue;
      if (state.get(t.k) === 1) return [...path.slice(path.indexOf(t)), t];
      if (!state.get(t.k)) { const c = visit(t); if (c) return c; }
    }
    path.pop();
    state.set(d.k, 2);
    return null;
  };
  for (const d of drafts) {
    if (!state.get(d.k)) { const c = visit(d); if (c) return c; }
  }
  return null;
}

/** planOf turns the drafts back into the plan shape planexec reads. */
export function planOf(task, drafts) {
  const idOf = new Map(drafts.map((d) => [d.k, d.id.trim()]));
  return {
    task,
    steps: drafts.map((d) => {
      const s = { id: d.id.trim(), title: d.title.trim(), description: d.description.trim() };
      if (d.done_when.trim()) s.done_when = d.done_when.trim();
      const deps = d.deps.map((k) => idOf.get(k) ?? String(k));
      if (deps.length) s.depends_on = deps;
      return s;
    }),
    replan: drafts.filter((d) => d.replan).map((d) => d.id.trim()),
  };
}

// editor is the plan in edit mode: one fieldset per step, the graph
// redrawn as the plan changes, and the problems listed before sending.
function editor(plan, submit, cancel) {
  const drafts = draftOf(plan);
  const list = h('ol', { class: 'plan-edit-steps' });
  const dag = h('figure', { class: 'dag-wrap' });
  const summary = h('div', { class: 'plan-problems', role: 'alert' });
  const announce = h('p', { class: 'visually-hidden', 'aria-live': 'polite' });
  const redrawDag = () => clear(dag).append(renderDag(drafts.map((d) => ({ id: String(d.k), title: d.title.trim() || d.id, depends_on: d.deps.map(String) }))));

  // render rebuilds the list; focus (a selector) says what to focus after.
  const render = (focus) => {
    clear(list);
    drafts.forEach((d, i) => list.append(stepEditor(d, i)));
    redrawDag();
    if (focus) list.querySelector(focus)?.focus();
  };
  const nameOf = (d) => d.title.trim() || d.id || 'this step';

  function stepEditor(d, i) {
    const base = `step-${d.k}`;
    const text = (field, label, tag, attrs = {}) => {
      const id = `${base}-${field}`;
      const input = h(tag, { id, name: field, 'data-k': d.k, value: d[field], rows: tag === 'textarea' ? 2 : null, type: tag === 'input' ? 'text' : null, 'aria-describedby': `${base}-err`, ...attrs,
        oninput: () => {
          d[field] = input.value;
          if (field === 'title' || field === 'id') {
            for (const el of list.querySelectorAll(`[data-name-of="${d.k}"]`)) el.textContent = nameOf(d);
            redrawDag();
          }
        } });
      return h('div', { class: `field f-${field}` }, h('label', { for: id }, label), input);
    };
    const others = drafts.filter((o) => o !== d);
    const deps = h('fieldset', { class: 'multi plan-deps' }, h('legend', {}, 'Runs after'),
      others.length ? others.map((o) => {
        const cid = `${base}-dep-${o.k}`;
        const cb = h('input', { type: 'checkbox', id: cid, 'data-dep': o.k, checked: d.deps.includes(o.k),
          onchange: () => {
            d.deps = cb.checked ? [...d.deps, o.k] : d.deps.filter((x) => x !== o.k);
            redrawDag();
          } });
        return h('span', { class: 'check' }, cb, h('label', { for: cid, 'data-name-of': o.k }, nameOf(o)));
      }) : h('span', { class: 'hint' }, 'No other step.'),
      // A dependency on a step that is not in the plan (the agent's or a
      // removed one) is listed so it can be dropped.
      d.deps.filter((x) => !drafts.some((o) => o.k === x)).map((x) => h('span', { class: 'check' },
        h('button', { type: 'button', class: 'small', onclick: () => { d.deps = d.deps.filter((y) => y !== x); render(`[data-k="${d.k}"][name=title]`); } }, `Drop unknown "${x}"`))));
    const rid = `${base}-replan`;
    const move = (delta) => {
      const j = i + delta;
      if (j < 0 || j >= drafts.length) return;
      [drafts[i], drafts[j]] = [drafts[j], drafts[i]];
      render(`[data-move="${delta}"][data-k="${d.k}"]:not(:disabled)`);
      if (!list.contains(document.activeElement)) list.querySelector(`[data-k="${d.k}"][name=title]`)?.focus();
      announce.textContent = `Moved "${nameOf(d)}" to position ${j + 1}.`;
    };
    const remove = () => {
      const who = nameOf(d);
      drafts.splice(i, 1);
      const freed = drafts.filter((o) => o.deps.includes(d.k));
      for (const o of freed) o.deps = o.deps.filter((x) => x !== d.k);
      render();
      (list.querySelectorAll('input[name=title]')[Math.min(i, drafts.length - 1)] || addBtn).focus();
      announce.textContent = `Removed "${who}".${freed.length ? ` ${freed.map(nameOf).join(', ')} no longer wait${freed.length === 1 ? 's' : ''} for it.` : ''}`;
    };
    return h('li', { 'data-k': d.k },
      h('fieldset', { class: 'plan-step-edit' },
        h('legend', {}, 'Step ', String(i + 1), ': ', h('span', { 'data-name-of': d.k }, nameOf(d))),
        text('title', 'Title', 'input', { 'aria-required': 'true' }),
        text('id', 'ID', 'input', { class: 'short', 'aria-required': 'true' }),
        text('description', 'Description', 'textarea'),
        text('done_when', 'Done when', 'input'),
        deps,
        h('span', { class: 'check' }, h('input', { type: 'checkbox', id: rid, checked: d.replan, onchange: (e) => { d.replan = e.target.checked; } }),
          h('label', { for: rid }, 'Re-plan the rest after this step')),
        h('p', { class: 'field-error', id: `${base}-err` }),
        h('div', { class: 'actions' },
          h('button', { type: 'button', 'data-move': '-1', 'data-k': d.k, disabled: i === 0, onclick: () => move(-1) }, 'Move up'),
          h('button', { type: 'button', 'data-move': '1', 'data-k': d.k, disabled: i === drafts.length - 1, onclick: () => move(1) }, 'Move down'),
          h('button', { type: 'button', class: 'danger', onclick: remove }, 'Remove step'))));
  }

  const addBtn = h('button', { type: 'button', onclick: () => {
    nextKey += 1;
    let n = drafts.length + 1;
    while (drafts.some((d) => d.id === `step_${n}`)) n += 1;
    drafts.push({ k: nextKey, id: `step_${n}`, title: '', description: '', done_when: '', deps: [], replan: false });
    render(`[data-k="${nextKey}"][name=title]`);
    announce.textContent = `Added step ${drafts.length}; give it a title.`;
  } }, 'Add a step');

  const send = (e) => {
    e.preventDefault();
    const probs = problems(drafts);
    for (const el of list.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid');
    for (const el of list.querySelectorAll('.field-error')) el.textContent = '';
    clear(summary);
    if (probs.length) {
      summary.append(h('p', {}, 'The plan cannot run yet:'), h('ul', {}, probs.map((p) => h('li', {}, p.message))));
      for (const p of probs) {
        if (p.k === null) continue;
        const err = list.querySelector(`#step-${p.k}-err`);
        if (err) err.textContent = [err.textContent, p.message].filter(Boolean).join(' ');
        const field = list.querySelector(`[data-k="${p.k}"][name="${p.field}"]`);
        if (field) field.setAttribute('aria-invalid', 'true');
      }
      const first = probs.find((p) => p.k !== null);
      (first && (list.querySelector(`[data-k="${first.k}"][name="${first.field}"]`) || list.querySelector(`[data-k="${first.k}"] input`)) || addBtn).focus();
      return;
    }
    submit({ action: 'edit', plan: planOf(plan.task || '', drafts) });
  };

  render();
  return h('form', { class: 'plan-edit answer', novalidate: true, onsubmit: send },
    h('p', { class: 'hint' }, 'Edit the steps, then send the plan. The graph follows your changes.'),
    dag, list,
    h('div', { class: 'actions' }, addBtn),
    summary, announce,
    h('div', { class: 'actions' },
      h('button', { type: 'submit', class: 'primary' }, 'Send the edited plan'),
      h('button', { type: 'button', onclick: cancel }, 'Discard the changes')));
}
