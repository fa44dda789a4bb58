// markdown.js — model text as safe HTML: marked renders the Markdown and
// DOMPurify removes what could run (script, event handlers, javascript:
// and other non-web URLs, forms, frames). The page's content security
// policy forbids inline script as a second wall. Then code blocks get
// highlighted (highlight.js, for the languages registered below) and a
// copy button, and tables a frame that scrolls sideways on its own.

import { marked } from './vendor/marked.js';
import DOMPurify from './vendor/dompurify.js';
import hljs from './vendor/hljs-core.js';
import bash from './vendor/hljs-bash.js';
import go from './vendor/hljs-go.js';
import javascript from './vendor/hljs-javascript.js';
import json from './vendor/hljs-json.js';
import python from './vendor/hljs-python.js';
import sql from './vendor/hljs-sql.js';
import yaml from './vendor/hljs-yaml.js';
import { h } from './dom.js';

for (const [name, lang] of Object.entries({ bash, go, javascript, json, python, sql, yaml })) hljs.registerLanguage(name, lang);
for (const [alias, name] of Object.entries({ sh: 'bash', shell: 'bash', js: 'javascript', py: 'python', yml: 'yaml', golang: 'go' })) {
  hljs.registerAliases(alias, { languageName: name });
}

marked.setOptions({ gfm: true, breaks: true });

// Links may only go to http(s) and mailto addresses; any other href is
// dropped, and every link opens in a new tab without an opener.
const SAFE_URL = /^(?:https?:|mailto:|#|\/(?!\/))/i;
DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.hasAttribute && node.hasAttribute('href')) {
    const href = node.getAttribute('href').trim();
    if (!SAFE_URL.test(href)) node.removeAttribute('href');
    else if (node.tagName === 'A') {
      node.setAttribute('target', '_blank');
      node.setAttribute('rel', 'noopener noreferrer nofollow');
    }
  }
  if (node.hasAttribute && node.hasAttribute('src') && !/^(?:https?:|data:image\/)/i.test(node.getAttribute('src'))) {
    node.removeAttribute('src');
  }
  // A model's image without a description is decorative to a screen reader.
  if (node.tagName === 'IMG' && !node.hasAttribute('alt')) node.setAttribute('alt', '');
});

/** renderMarkdown returns sanitized HTML for a Markdown text. */
export function renderMarkdown(text) {
  const html = marked.parse(String(text ?? ''), { async: false });
  return DOMPurify.sanitize(html, {
    FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select', 'iframe', 'object', 'embed'],
    FORBID_ATTR: ['style'],
  });
}

/** setMarkdown fills el with text rendered as safe Markdown: code blocks
 * highlighted, each with a copy button, and tables in a scrolling frame. */
export function setMarkdown(el, text) {
  el.innerHTML = renderMarkdown(text);
  for (const pre of el.querySelectorAll('pre')) decorateCode(pre);
  for (const table of el.querySelectorAll('table')) {
    const wrap = h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': 'Table' });
    table.replaceWith(wrap);
    wrap.append(table);
  }
}

/** languageOf returns the registered language a code element names
 * (class "language-x"), or ''. */
function languageOf(code) {
  const m = /\blanguage-([\w+-]+)/.exec(code.className);
  const lang = m && hljs.getLanguage(m[1]) ? m[1] : '';
  return lang;
}

// decorateCode highlights a block of code in a known language and puts it
// in a frame with its language and a copy button.
function decorateCode(pre) {
  const code = pre.querySelector('code');
  if (!code) return;
  const text = code.textContent;
  const lang = languageOf(code);
  if (lang) {
    const out = hljs.highlight(text, { language: lang, ignoreIllegals: true });
    code.innerHTML = out.value; // highlight.js escapes the text it wraps
    code.classList.add('hljs');
  }
  const name = lang ? (hljs.getLanguage(lang).name || lang) : 'text';
  const said = h('span', {}, 'Copy');
  const copy = h('button', { type: 'button', class: 'copy small' }, said, h('span', { class: 'visually-hidden' }, ` the ${name} code`));
  copy.addEventListener('click', () => copyText(text).then(
    () => flash(said, 'Copied'), () => flash(said, 'Copy failed')));
  const frame = h('div', { class: 'code-block' }, h('div', { class: 'code-head' }, h('span', { class: 'code-lang' }, name), copy));
  pre.replaceWith(frame);
  // The block scrolls sideways on its own, so the keyboard can reach it.
  pre.setAttribute('tabindex', '0');
  frame.append(pre);
}

function flash(label, text) {
  label.textContent = text;
  clearTimeout(label._flash);
  label._flash = setTimeout(() => { label.textContent = 'Copy'; }, 1600);
}

/** copyText puts text on the clipboard: the Clipboard API where the page
 * may use it, else a selected hidden text box and the copy command. */
export async function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  const box = h('textarea', { class: 'visually-hidden', 'aria-hidden': 'true', tabindex: '-1' }, text);
  document.body.append(box);
  box.select();
  const ok = document.execCommand('copy');
  box.remove();
  if (!ok) throw new Error('the browser refused to copy');
}
