// The queue view: per pool, the queued jobs (position, wait, why they
// wait, the estimated start) and the running ones; filters by user and
// state; the logged-in user's jobs first and marked; cancel on one's own
// jobs (an admin's: all). Reads GET /v1/queue.
import * as api from './api.js';
import {el, clear, demand, duration, localTime, stateBadge, jobLink, keepFocus} from './util.js';

export function mountQueue(main, ctx) {
  const me = ctx.user.user;
  const view = {queue: null, user: '', state: ''};
  const status = el('p', {id: 'queue-status', class: 'status', 'aria-live': 'polite'});
  const userFilter = el('input', {id: 'queue-user', type: 'search', list: 'queue-users',
    placeholder: 'any user'});
  const users = el('datalist', {id: 'queue-users'});
  const stateFilter = el('select', {id: 'queue-state'},
    el('option', {value: ''}, 'queued and running'),
    el('option', {value: 'queued'}, 'queued'),
    el('option', {value: 'running'}, 'running (and starting)'));
  const body = el('div', {id: 'queue-pools'}, el('p', null, 'Loading the queue…'));
  main.append(
    el('h1', null, 'Queue'),
    el('div', {class: 'toolbar'},
      el('label', {for: 'queue-user'}, 'User'), userFilter, users,
      el('label', {for: 'queue-state'}, 'State'), stateFilter),
    status, body);
  document.title = 'Queue – tessera console';

  userFilter.addEventListener('input', () => {
    view.user = userFilter.value.trim();
    render();
  });
  stateFilter.addEventListener('change', () => {
    view.state = stateFilter.value;
    render();
  });

  const mineFirst = (a, b) => (b.user === me) - (a.user === me);
  const keep = (j) => !view.user || j.user === view.user;

  function render() {
    if (!view.queue) return;
    keepFocus(body, draw);
  }

  function draw() {
    const names = new Set();
    const sections = view.queue.pools.map((pool) => {
      for (const j of [...pool.queued, ...pool.running]) names.add(j.user);
      const queued = pool.queued.filter(keep).sort((a, b) => mineFirst(a, b) || a.position - b.position);
      const running = pool.running.filter(keep).sort(mineFirst);
      const id = `queue-${pool.name.replace(/[^A-Za-z0-9_-]/g, '_')}`;
      const section = el('section', {class: 'pool', 'aria-labelledby': id},
        el('h2', {id}, `Pool ${pool.name}`,
          el('span', {class: 'sub'}, ` — ${pool.policy ?? ''}, ${pool.gpus ?? '?'} GPUs, ` +
            `${pool.queued.length} queued, ${pool.running.length} running`)));
      if (view.state !== 'running') section.append(queuedTable(pool.name, queued));
      if (view.state !== 'queued') section.append(runningTable(pool.name, running));
      return section;
    });
    clear(users).append(...[...names].sort().map((n) => el('option', {value: n})));
    clear(body).append(...sections);
  }

  function rowAttrs(j) {
    return {class: j.user === me ? 'mine' : null, dataset: {job: j.id}};
  }

  function who(j) {
    return j.user === me ? [j.user, ' ', el('span', {class: 'badge mine'}, 'you')] : j.user;
  }

  function queuedTable(pool, jobs) {
    if (!jobs.length) return el('p', {class: 'empty'}, `Nothing queued in ${pool}.`);
    const rows = jobs.map((j) => el('tr', rowAttrs(j),
      el('td', null, String(j.position)),
      el('th', {scope: 'row'}, link(j)),
      el('td', null, j.name || '–'),
      el('td', null, who(j)),
      el('td', null, stateBadge(j.state)),
      el('td', null, demandOf(j)),
      el('td', null, duration(j.waiting_s)),
      el('td', {class: 'why'}, j.why || '–',
        j.decision && j.decision.summary && j.why_code !== 'decision' ?
          el('span', {class: 'decision'}, `Decision: ${j.decision.summary}`) : null),
      el('td', null, j.estimated_start ? localTime(j.estimated_start) : 'unknown',
        j.estimate ? el('span', {class: 'estimate'}, j.estimate) : null),
      el('td', null, cancelButton(j))));
    return tableOf(`Queued in ${pool}`, ['Position', 'Job', 'Name', 'User', 'State',
      'Demand', 'Waiting', 'Why it waits', 'Estimated start', 'Actions'], rows);
  }

  function runningTable(pool, jobs) {
    if (!jobs.length) return el('p', {class: 'empty'}, `Nothing running in ${pool}.`);
    const rows = jobs.map((j) => el('tr', rowAttrs(j),
      el('th', {scope: 'row'}, link(j)),
      el('td', null, j.name || '–'),
      el('td', null, who(j)),
      el('td', null, stateBadge(j.state)),
      el('td', null, demandOf(j)),
      el('td', null, (j.gpus || []).map((g) => g.gpu).join(', ') || j.node || '–'),
      el('td', null, duration(j.running_s)),
      el('td', null, j.ends_at ? localTime(j.ends_at) : 'unknown'),
      el('td', null, cancelButton(j))));
    return tableOf(`Running in ${pool}`, ['Job', 'Name', 'User', 'State', 'Demand',
      'GPUs', 'Running for', 'Ends', 'Actions'], rows);
  }

  function link(j) {
    const a = jobLink(j.id);
    a.dataset.key = `job:${j.id}`;
    return a;
  }

  function demandOf(j) {
    const text = demand(j.demand);
    if (j.split) return `${text} (split model)`;
    if (j.model) return `${text} (model)`;
    return text;
  }

  function cancelButton(j) {
    if (j.user !== me && !ctx.user.admin) return '';
    const b = el('button', {type: 'button', class: 'cancel', dataset: {key: `cancel:${j.id}`},
      'aria-label': `Cancel job ${j.id}${j.name ? ` (${j.name})` : ''}`}, 'Cancel');
    b.addEventListener('click', async () => {
      if (!window.confirm(`Cancel job ${j.id}${j.name ? ` (${j.name})` : ''}?`)) return;
      b.disabled = true;
      try {
        const job = await api.post(`/v1/jobs/${j.id}/cancel`);
        status.textContent = `Job ${job.id} is ${job.state}.`;
        ctx.announce(status.textContent);
        await refresh();
      } catch (e) {
        b.disabled = false;
        status.textContent = `Could not cancel job ${j.id}: ${e.message}`;
      }
    });
    return b;
  }

  async function refresh() {
    const r = await api.getJson('/v1/queue');
    if (r.changed || !view.queue) {
      view.queue = r.data;
      render();
    }
  }

  return {refresh, destroy() {}};
}

function tableOf(caption, headers, rows) {
  return el('table', {class: 'jobs'},
    el('caption', null, caption),
    el('thead', null, el('tr', null, headers.map((h) => el('th', {scope: 'col'}, h)))),
    el('tbody', null, rows));
}
