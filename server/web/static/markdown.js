// markdown.js — model text as safe HTML: marked renders the Markdown and
// DOMPurify removes what could run (script, event handlers, javascript:
// and other non-web URLs, forms, frames). The page's content security
// policy forbids inline script as a second wall.

import { marked } from './vendor/marked.js';
import DOMPurify from './vendor/dompurify.js';

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

/** setMarkdown fills el with text rendered as safe Markdown. */
export function setMarkdown(el, text) {
  el.innerHTML = renderMarkdown(text);
}
