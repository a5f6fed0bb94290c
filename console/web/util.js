// Small helpers shared by the console's views: DOM building (text only,
// never innerHTML with data) and the human formats (sizes, durations,
// times).

// el('a', {href: '#/x', class: 'y'}, 'text', child, ...): an element whose
// attributes are set with setAttribute and whose children are nodes or
// text (as text nodes: user input never becomes markup).
export function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  if (attrs) {
    for (const [key, value] of Object.entries(attrs)) {
      if (value === null || value === undefined || value === false) continue;
      if (key === 'on') {
        for (const [type, fn] of Object.entries(value)) {
          node.addEventListener(type, fn);
        }
      } else if (key === 'dataset') {
        Object.assign(node.dataset, value);
      } else if (key === 'style' && typeof value === 'object') {
        Object.assign(node.style, value);
      } else {
        node.setAttribute(key, value === true ? '' : String(value));
      }
    }
  }
  append(node, children);
  return node;
}

export function append(node, children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function clear(node) {
  while (node.firstChild) node.firstChild.remove();
  return node;
}

// Text for screen readers only.
export function srOnly(text) {
  return el('span', {class: 'sr-only'}, text);
}

// 8192 -> "8 GiB", 700 -> "700 MiB", 1536 -> "1.5 GiB".
export function mib(value) {
  if (value === null || value === undefined) return '–';
  const n = Number(value);
  if (Math.abs(n) >= 1024 * 1024) return trim(n / (1024 * 1024)) + ' TiB';
  if (Math.abs(n) >= 1024) return trim(n / 1024) + ' GiB';
  return trim(n) + ' MiB';
}

export function bytes(value) {
  if (value === null || value === undefined) return '–';
  const n = Number(value);
  if (Math.abs(n) < 1024 * 1024) {
    return Math.abs(n) < 1024 ? n + ' B' : trim(n / 1024) + ' KiB';
  }
  return mib(n / (1024 * 1024));
}

function trim(x) {
  return x >= 100 ? String(Math.round(x)) : String(Number(x.toFixed(1)));
}

// 200 -> "3m 20s", 7322 -> "2h 2m", 0.4 -> "0s".
export function duration(seconds) {
  if (seconds === null || seconds === undefined || !isFinite(seconds)) return '–';
  let s = Math.max(0, Math.round(seconds));
  const d = Math.floor(s / 86400);
  s -= d * 86400;
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  if (d) return `${d}d ${h}h`;
  if (h) return `${h}h ${m}m`;
  if (m) return `${m}m ${s}s`;
  return `${s}s`;
}

// An ISO time as local date and time ("2026-11-26 06:02:10"), '–' for null.
export function localTime(iso) {
  if (!iso) return '–';
  const t = new Date(iso);
  if (isNaN(t)) return String(iso);
  const pad = (n) => String(n).padStart(2, '0');
  return `${t.getFullYear()}-${pad(t.getMonth() + 1)}-${pad(t.getDate())} ` +
    `${pad(t.getHours())}:${pad(t.getMinutes())}:${pad(t.getSeconds())}`;
}

export function clock(date) {
  const pad = (n) => String(n).padStart(2, '0');
  return `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}

// A job's demand for people: "2 GPUs", "250 milli + 8 GiB", plus CPU and
// memory when asked.
export function demand(d) {
  if (!d) return '–';
  const parts = [];
  if (d.gpus) parts.push(d.gpus === 1 ? '1 GPU' : `${d.gpus} GPUs`);
  else if (d.gpu_milli || d.gpu_memory_mib) {
    parts.push(`${d.gpu_milli || 0} milli + ${mib(d.gpu_memory_mib || 0)}`);
  }
  if (!parts.length) parts.push('no GPU');
  return parts.join(', ');
}

export const TERMINAL = new Set(['succeeded', 'failed', 'oom', 'cancelled', 'preempted']);

// A state as a badge: text and a class (colour is never the only signal).
export function stateBadge(state) {
  return el('span', {class: `badge state-${state}`}, state);
}

export function jobLink(id, text) {
  return el('a', {href: `#/jobs/${encodeURIComponent(id)}`}, text ?? `#${id}`);
}

// A table: headers (strings; scope=col), rows of cells (nodes or text).
export function table(caption, headers, rows, attrs = {}) {
  const head = el('thead', null,
    el('tr', null, headers.map((h) => el('th', {scope: 'col'}, h))));
  const body = el('tbody', null, rows.map((cells) => rowOf(cells)));
  return el('table', attrs, caption ? el('caption', null, caption) : null, head, body);
}

function rowOf(cells) {
  if (cells instanceof Node) return cells;
  return el('tr', null, cells.map((c, i) =>
    i === 0 ? el('th', {scope: 'row'}, c) : el('td', null, c)));
}

// Runs render(), which rebuilds part of `container`, and gives the focus
// back to the rebuilt control of the same data-key (a polled page redraws
// under a keyboard user's feet).
export function keepFocus(container, render) {
  const active = document.activeElement;
  const key = active && container.contains(active) && active.dataset ? active.dataset.key : undefined;
  render();
  if (key && !container.contains(document.activeElement)) {
    const again = container.querySelector(`[data-key="${CSS.escape(key)}"]`);
    if (again) again.focus();
  }
}
