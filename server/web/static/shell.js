// shell.js — the page as an app: the threads and the run panel open as
// drawers on narrow windows (a button in the header, Escape or the scrim
// closes them; resizing the window does not animate them), and the
// transcript follows what is being written while the reader is at its
// end, without pulling them back when they scrolled up to read.

/** drawers wires the two drawers; it returns close(), which shuts both. */
export function drawers() {
  const pairs = [
    { cls: 'sidebar-open', panel: document.getElementById('sidebar'), open: document.getElementById('sidebar-open'), close: document.getElementById('sidebar-close') },
    { cls: 'inspector-open', panel: document.getElementById('inspector'), open: document.getElementById('inspector-open'), close: document.getElementById('inspector-close') },
  ];
  const scrim = document.getElementById('scrim');
  // The drawers slide only while the person opens or closes one
  // (drawer-moving, style.css), never when the window is resized across a
  // breakpoint and a panel becomes a closed drawer or comes back.
  let moving = 0;
  const set = (d, on) => {
    if (document.body.classList.contains(d.cls) === on) return;
    document.body.classList.add('drawer-moving');
    clearTimeout(moving);
    moving = setTimeout(() => document.body.classList.remove('drawer-moving'), 400); // after the 0.2 s slide
    document.body.classList.toggle(d.cls, on);
    d.open.setAttribute('aria-expanded', String(on));
    scrim.hidden = !pairs.some((p) => document.body.classList.contains(p.cls));
  };
  const closeAll = (refocus) => {
    for (const d of pairs) {
      if (!document.body.classList.contains(d.cls)) continue;
      set(d, false);
      if (refocus && d.panel.contains(document.activeElement)) d.open.focus();
    }
  };
  for (const d of pairs) {
    d.open.addEventListener('click', () => { closeAll(false); set(d, true); d.close.focus(); });
    d.close.addEventListener('click', () => closeAll(true));
  }
  scrim.addEventListener('click', () => closeAll(true));
  document.addEventListener('keydown', (e) => { if (e.key === 'Escape' && !scrim.hidden) closeAll(true); });
  return () => closeAll(false);
}

/** follow keeps log scrolled to its end while the reader is there: any
 * change inside it (a token, a card) scrolls it down; scrolling up stops
 * that until the reader comes back to the end. It returns end(), which
 * jumps to the end and follows again (a thread opened, a message sent),
 * and top(). */
export function follow(log) {
  let stick = true;
  // mine is where our own scrolling put the log (-1: none pending). A
  // scroll event that finds the log there is ours; one that finds it
  // elsewhere is the reader's, even when the browser folded both into one
  // event (a flag "the next event is ours" would swallow the reader's).
  let mine = -1;
  // seen is where the log was last left (by us or by a scroll event read).
  // A change that comes after the reader scrolled up but before their
  // scroll event (events wait for the next frame) finds the log above it:
  // that is the reader's doing, so following stops there and then instead
  // of pulling them back down.
  let seen = 0;
  const atEnd = () => log.scrollHeight - log.scrollTop - log.clientHeight < 48;
  log.addEventListener('scroll', () => {
    const ours = mine >= 0 && Math.abs(log.scrollTop - mine) < 2;
    mine = -1;
    seen = log.scrollTop;
    if (!ours) stick = atEnd();
  }, { passive: true });
  const toEnd = () => {
    if (log.scrollTop + log.clientHeight >= log.scrollHeight - 1) { seen = log.scrollTop; return; }
    log.scrollTop = log.scrollHeight;
    mine = seen = log.scrollTop;
  };
  new MutationObserver(() => {
    if (stick && log.scrollTop < seen - 1 && !atEnd()) stick = false;
    if (stick) toEnd();
  }).observe(log, { childList: true, subtree: true, characterData: true });
  return {
    end() { stick = true; toEnd(); },
    /** top shows the start of the log and stops following (the welcome). */
    top() { stick = false; log.scrollTop = 0; seen = 0; },
  };
}
