// api.js — the page's only way to the server: the public HTTP API, the same
// a client uses. A small fetch wrapper (API key, problem+json errors) and a
// reader of server-sent events over fetch (EventSource cannot POST a body
// or send an Authorization header).

const KEY = 'trellis.apiKey';

/** ApiError is a refused request: the status and the server's problem. */
export class ApiError extends Error {
  constructor(status, problem) {
    super(problemText(status, problem));
    this.status = status;
    this.problem = problem || {};
  }
}

/** problemText makes one readable line of an RFC 9457 problem. */
function problemText(status, p) {
  if (!p) return `HTTP ${status}`;
  const fields = (p.errors || []).map((e) => `${e.pointer || ''}: ${e.detail || ''}`);
  return fields.length ? fields.join('\n') : (p.detail || p.title || `HTTP ${status}`);
}

/** apiKey returns the key the person gave (kept in localStorage), or ''. */
export function apiKey() {
  try { return localStorage.getItem(KEY) || ''; } catch { return ''; }
}

/** setApiKey stores (or, when empty, forgets) the key. */
export function setApiKey(k) {
  try { k ? localStorage.setItem(KEY, k) : localStorage.removeItem(KEY); } catch { /* private mode */ }
}

// onUnauthorized is called on every 401, so the page can ask for a key.
let onUnauthorized = () => {};
export function whenUnauthorized(fn) { onUnauthorized = fn; }

/** request sends a request and returns the Response, throwing ApiError on
 * 4xx/5xx. body (when given) is sent as JSON. */
export async function request(method, path, body, opts = {}) {
  const headers = { ...(opts.headers || {}) };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const k = apiKey();
  if (k) headers.Authorization = `Bearer ${k}`;
  const res = await fetch(path, {
    method, headers, signal: opts.signal,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) {
    let problem = null;
    try { problem = await res.json(); } catch { /* not JSON */ }
    if (res.status === 401) onUnauthorized();
    throw new ApiError(res.status, problem);
  }
  return res;
}

/** json sends a request and decodes its JSON answer (null for 204). */
export async function json(method, path, body) {
  const res = await request(method, path, body);
  return res.status === 204 ? null : res.json();
}

/** stream sends a request answered with server-sent events and yields each
 * event as {event, id, data} (data decoded from JSON when it is JSON). */
export async function* stream(method, path, body, opts = {}) {
  const res = await request(method, path, body, { ...opts, headers: { Accept: 'text/event-stream', ...(opts.headers || {}) } });
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  let ev = { event: 'message', id: null, data: [] };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value;
    let nl;
    while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + (buf.startsWith('\r\n', nl) ? 2 : 1));
      if (line === '') { // a blank line ends the event
        if (ev.data.length) yield finish(ev);
        ev = { event: 'message', id: ev.id, data: [] };
        continue;
      }
      if (line.startsWith(':')) continue; // a comment (keep-alive)
      const i = line.indexOf(':');
      const field = i < 0 ? line : line.slice(0, i);
      let val = i < 0 ? '' : line.slice(i + 1);
      if (val.startsWith(' ')) val = val.slice(1);
      if (field === 'event') ev.event = val;
      else if (field === 'data') ev.data.push(val);
      else if (field === 'id') ev.id = val;
    }
  }
}

function finish(ev) {
  const text = ev.data.join('\n');
  let data = text;
  try { data = text === '' ? null : JSON.parse(text); } catch { /* plain text */ }
  return { event: ev.event, id: ev.id, data };
}
