// The queue tree on the cluster page (docs/quotas.md): per queue, indented
// under its parent, its guarantee, limit and weight, what its subtree uses,
// how much of that is borrowed beyond its guarantees, and how much of its
// idle guarantee others borrow now (lent). A bar draws the same numbers in
// GPU milli against the guarantee; the table cells are the text
// equivalent. Reads the "queues" array of GET /v1/cluster.
import {el, mib, table} from './util.js';

// {gpu_milli, gpu_memory_mib} with null for "no limit".
function amount(a) {
  if (!a || (a.gpu_milli === null && a.gpu_memory_mib === null)) return 'none';
  const milli = a.gpu_milli === null ? '–' : `${a.gpu_milli} milli`;
  return `${milli}, ${mib(a.gpu_memory_mib)}`;
}

const milliOf = (a) => (a && a.gpu_milli !== null ? a.gpu_milli : 0);

// Used within the guarantee (solid), borrowed beyond it (hatched), idle
// guarantee lent to others (dotted) and idle guarantee nobody uses (empty),
// end to end; a tick marks where the guarantee ends.
function usageBar(q) {
  const guaranteed = milliOf(q.guaranteed);
  const borrowed = milliOf(q.borrowed);
  const own = Math.max(0, milliOf(q.used) - borrowed);
  const idle = milliOf(q.idle);
  const lent = Math.min(milliOf(q.lent), idle);
  const scale = Math.max(guaranteed, own + borrowed + idle, 1);
  const pct = (x) => `${(100 * Math.max(0, x) / scale).toFixed(1)}%`;
  return el('span', {class: 'qbar', 'aria-hidden': 'true'},
    el('span', {class: 'seg seg-own', style: {width: pct(own)}}),
    el('span', {class: 'seg seg-borrowed', style: {width: pct(borrowed)}}),
    el('span', {class: 'seg seg-lent', style: {width: pct(lent)}}),
    el('span', {class: 'seg seg-idle', style: {width: pct(idle - lent)}}),
    guaranteed ? el('span', {class: 'qtick', style: {left: pct(guaranteed)}}) : null);
}

// A section with the tree's table, or null when the service has no queues.
export function renderQueues(queues) {
  if (!Array.isArray(queues) || !queues.length) return null;
  const rows = queues.map((q) => {
    const depth = Math.max(0, (q.depth ?? 1) - 1);
    const name = el('span', {class: 'qname', style: {paddingLeft: `${depth * 1.2}em`}},
      depth ? '└ ' : '', q.name);
    const label = `Queue ${q.name}: uses ${milliOf(q.used)} of its guaranteed ` +
      `${milliOf(q.guaranteed)} milli, ${milliOf(q.borrowed)} borrowed, ` +
      `${milliOf(q.lent)} lent`;
    return el('tr', {dataset: {queue: q.name}},
      el('th', {scope: 'row', 'aria-label': label}, name),
      el('td', null, amount(q.guaranteed)),
      el('td', null, amount(q.limit)),
      el('td', null, String(q.weight ?? 1)),
      el('td', null, usageBar(q), el('span', {class: 'qused'}, amount(q.used))),
      el('td', null, amount(q.borrowed)),
      el('td', null, amount(q.lent)),
      el('td', null, String(q.running ?? 0)),
      el('td', null, String(q.queued ?? 0)));
  });
  const t = table('Team queues: guarantees, use, borrowing and lending',
    ['Queue', 'Guaranteed', 'Limit', 'Weight', 'Used', 'Borrowed', 'Lent', 'Running', 'Queued'],
    rows, {id: 'queues-table', class: 'queues'});
  return el('section', {class: 'queues-section', 'aria-labelledby': 'queues-h'},
    el('h2', {id: 'queues-h'}, 'Team queues'),
    el('p', {class: 'legend'}, 'Each bar, in GPU milli against the queue\'s guarantee: ' +
      'solid is use within the guarantee, hatched is borrowed beyond it, dotted is idle ' +
      'guarantee lent to other queues, empty is idle guarantee nobody uses; the tick marks the guarantee.'),
    t);
}
