// A split job's plan on the job page: the devices table from job.plan, the
// simulated step's timeline (zoomable: buttons, Ctrl+wheel, + - 0) and the
// op graph coloured by device, both inline SVG in HTML fragments from the
// service (the pictures of `tessera plan --html`), sanitized before they
// join the page.
import * as api from './api.js';
import {el, bytes, table} from './util.js';

export function planSection(job) {
  const plan = job.plan;
  const used = (plan.devices || []).filter((d) => (d.ops ?? 1) > 0);
  const devices = table('Devices of the plan',
    ['Device', 'Kind', 'Ops', 'Compute share', 'Busy', 'Memory peak', 'Usable memory', 'Weights'],
    used.map((d) => [d.id, d.kind ?? '–', String(d.ops ?? '–'),
      d.compute_share === undefined ? '–' : `${Math.round(d.compute_share * 1000)} milli`,
      d.busy_ms === undefined ? '–' : `${num(d.busy_ms)} ms`,
      bytes(d.memory_peak_bytes), bytes(d.memory_capacity_bytes), bytes(d.weight_bytes)]),
    {class: 'plan-devices'});
  const facts = el('p', null,
    `Algorithm ${plan.algorithm ?? '–'}, ${plan.mode ?? ''} at batch ${plan.batch ?? '–'}: ` +
    `a simulated step of ${num(plan.step_time_ms)} ms ` +
    `(lower bound ${num(plan.lower_bound_ms)} ms), ${bytes(plan.transfer_bytes)} sent between devices.`);
  const timeline = el('figure', {class: 'svg-figure', id: 'plan-timeline'},
    el('figcaption', null, 'Timeline of one simulated step: a lane per device, then per link'),
    el('p', {class: 'status'}, 'Loading the timeline…'));
  const graph = el('figure', {class: 'svg-figure', id: 'plan-graph'},
    el('figcaption', null, 'The op graph, coloured by device'),
    el('p', {class: 'status'}, 'Loading the graph…'));
  const section = el('section', {class: 'plan', 'aria-labelledby': 'plan-h'},
    el('h2', {id: 'plan-h'}, 'Plan (split over GPUs)'), facts, devices, timeline, graph);
  loadPicture(job.id, 'timeline', timeline, true);
  loadPicture(job.id, 'graph', graph, false);
  return section;
}

function num(x) {
  if (x === null || x === undefined) return '–';
  return Number(x).toFixed(Number(x) >= 100 ? 0 : 2);
}

async function loadPicture(id, what, figure, zoomable) {
  const placeholder = figure.querySelector('.status');
  let nodes;
  try {
    const r = await api.getText(`/v1/jobs/${id}/plan/${what}.html`);
    nodes = sanitize(r.text);
  } catch (e) {
    placeholder.textContent = `The ${what} is not available: ${e.message}`;
    return;
  }
  if (!nodes.length) {
    placeholder.textContent = `The ${what} is empty.`;
    return;
  }
  placeholder.replaceWith(...nodes);
  if (zoomable) {
    const scroller = figure.querySelector('.tl-scroll');
    const svg = scroller && scroller.querySelector('svg');
    if (svg) addZoom(figure, scroller, svg);
  }
}

// The service's HTML fragment (inline SVG, tables) as nodes of this
// document, without scripts, foreignObject, frames, event handler
// attributes or links out.
export function sanitize(text) {
  const doc = new DOMParser().parseFromString(text, 'text/html');
  const body = doc.body;
  for (const bad of body.querySelectorAll(
    'script, foreignObject, iframe, object, embed, link, meta, style, form')) {
    bad.remove();
  }
  for (const node of body.querySelectorAll('*')) {
    for (const attr of [...node.attributes]) {
      const name = attr.name.toLowerCase();
      const value = attr.value.trim().toLowerCase();
      if (name.startsWith('on')) node.removeAttribute(attr.name);
      else if ((name === 'href' || name === 'xlink:href' || name === 'src') &&
               !value.startsWith('#')) {
        node.removeAttribute(attr.name);
      }
    }
  }
  return [...body.childNodes].map((n) => document.importNode(n, true));
}

// Zoom by the timeline's width (its lanes stretch, its ticks sit at
// percentages); the time under the pointer, or the middle, stays put.
function addZoom(figure, scroller, svg) {
  const base = Math.max(scroller.clientWidth - 2, 200);
  let zoom = 1;
  const level = el('span', {class: 'zoom-level', 'aria-live': 'polite'}, 'zoom 1x');
  const apply = (z, at) => {
    const x = at === undefined ? scroller.clientWidth / 2 : at;
    const t = (scroller.scrollLeft + x) / (base * zoom);
    zoom = Math.min(4096, Math.max(1, z));
    svg.setAttribute('width', String(Math.round(base * zoom)));
    scroller.scrollLeft = t * base * zoom - x;
    level.textContent = `zoom ${Math.round(zoom * 100) / 100}x`;
  };
  const button = (text, label, fn) => {
    const b = el('button', {type: 'button', 'aria-label': label}, text);
    b.addEventListener('click', () => fn());
    return b;
  };
  const controls = el('div', {class: 'zoom', role: 'group', 'aria-label': 'Timeline zoom'},
    button('−', 'Zoom out', () => apply(zoom / 2)),
    button('+', 'Zoom in', () => apply(zoom * 2)),
    button('Reset', 'Reset zoom', () => apply(1)),
    level);
  figure.insertBefore(controls, figure.querySelector('.tl') || scroller);
  scroller.addEventListener('wheel', (event) => {
    if (!event.ctrlKey) return;
    event.preventDefault();
    const r = scroller.getBoundingClientRect();
    apply(event.deltaY < 0 ? zoom * 1.25 : zoom / 1.25, event.clientX - r.left);
  }, {passive: false});
  scroller.addEventListener('keydown', (event) => {
    if (event.key === '+' || event.key === '=') apply(zoom * 2);
    else if (event.key === '-') apply(zoom / 2);
    else if (event.key === '0') apply(1);
    else return;
    event.preventDefault();
  });
  apply(1);
}
