// A split job's plan on the job page: the devices table from job.plan, the
// simulated step's timeline (zoomable: buttons and Ctrl+wheel) and the op
// graph coloured by device, both SVG from the service, sanitized before
// they join the page.
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
  loadSvg(job.id, 'timeline', timeline, true);
  loadSvg(job.id, 'graph', graph, false);
  return section;
}

function num(x) {
  if (x === null || x === undefined) return '–';
  return Number(x).toFixed(Number(x) >= 100 ? 0 : 2);
}

async function loadSvg(id, what, figure, zoomable) {
  const placeholder = figure.querySelector('.status');
  let svg;
  try {
    const r = await api.getText(`/v1/jobs/${id}/plan/${what}.svg`);
    svg = sanitize(r.text);
  } catch (e) {
    placeholder.textContent = `The ${what} is not available: ${e.message}`;
    return;
  }
  if (!svg) {
    placeholder.textContent = `The ${what} could not be read.`;
    return;
  }
  const scroller = el('div', {class: 'svg-scroll', tabindex: '0', role: 'group',
    'aria-label': `${what === 'timeline' ? 'Timeline' : 'Graph'}, scrollable` +
      (zoomable ? '; Ctrl+wheel, + and - zoom' : '')}, svg);
  placeholder.replaceWith(scroller);
  if (zoomable) addZoom(figure, scroller, svg);
}

// The SVG text as an <svg> element of this document, without scripts,
// foreignObject, event handler attributes or links out; null if not SVG.
export function sanitize(text) {
  const doc = new DOMParser().parseFromString(text, 'image/svg+xml');
  const root = doc.documentElement;
  if (!root || root.nodeName !== 'svg' || doc.querySelector('parsererror')) return null;
  for (const bad of root.querySelectorAll('script, foreignObject, iframe, object, embed')) {
    bad.remove();
  }
  for (const node of [root, ...root.querySelectorAll('*')]) {
    for (const attr of [...node.attributes]) {
      const name = attr.name.toLowerCase();
      const value = attr.value.trim().toLowerCase();
      if (name.startsWith('on')) node.removeAttribute(attr.name);
      else if ((name === 'href' || name === 'xlink:href') && !value.startsWith('#')) {
        node.removeAttribute(attr.name);
      }
    }
  }
  return document.importNode(root, true);
}

function addZoom(figure, scroller, svg) {
  const baseWidth = parseFloat(svg.getAttribute('width')) || svg.getBBox?.().width || 1000;
  let zoom = 1;
  const level = el('span', {class: 'zoom-level', 'aria-live': 'polite'}, '100%');
  const apply = (z) => {
    zoom = Math.min(64, Math.max(0.25, z));
    svg.setAttribute('width', String(Math.round(baseWidth * zoom)));
    level.textContent = `${Math.round(zoom * 100)}%`;
  };
  const button = (text, label, fn) => {
    const b = el('button', {type: 'button', 'aria-label': label}, text);
    b.addEventListener('click', fn);
    return b;
  };
  const controls = el('div', {class: 'zoom', role: 'group', 'aria-label': 'Timeline zoom'},
    button('−', 'Zoom out', () => apply(zoom / 1.5)),
    button('+', 'Zoom in', () => apply(zoom * 1.5)),
    button('Reset', 'Reset zoom', () => apply(1)),
    level);
  figure.insertBefore(controls, scroller);
  scroller.addEventListener('wheel', (event) => {
    if (!event.ctrlKey) return;
    event.preventDefault();
    apply(zoom * (event.deltaY < 0 ? 1.25 : 0.8));
  }, {passive: false});
  scroller.addEventListener('keydown', (event) => {
    if (event.key === '+' || event.key === '=') apply(zoom * 1.5);
    else if (event.key === '-') apply(zoom / 1.5);
    else if (event.key === '0') apply(1);
    else return;
    event.preventDefault();
  });
}
