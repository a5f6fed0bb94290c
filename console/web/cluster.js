// The cluster view: every pool (collapsible, with totals), its nodes (a
// page at a time, filtered) and each GPU drawn as two bars, reserved
// compute (milli) and reserved memory, with a text equivalent; Enter,
// Space or a click on a GPU lists its jobs. Admins drain and undrain nodes.
// With replicas, which one leads, since when, and whether the one this page
// talks to follows.
import * as api from './api.js';
import {el, append, clear, mib, jobLink, keepFocus, localTime} from './util.js';
import {renderQueues} from './teams.js';

const PAGE = 50;  // nodes drawn per pool before "Show more"

export function mountCluster(main, ctx) {
  const view = {
    cluster: null,
    jobs: new Map(),      // id -> job (running and starting)
    pages: new Map(),     // pool -> nodes shown
    collapsed: new Set(), // pools folded
    filter: '',
    openGpu: null,        // the GPU whose job list is open
    painted: false,
  };
  const status = el('p', {id: 'cluster-status', class: 'status', 'aria-live': 'polite'});
  const filter = el('input', {id: 'cluster-filter', type: 'search',
    placeholder: 'node name, GPU kind, busy, free or drained',
    'aria-describedby': 'cluster-status'});
  const pools = el('div', {id: 'pools'}, el('p', null, 'Loading the cluster…'));
  const queues = el('div', {id: 'queues'});
  const replica = el('p', {id: 'cluster-replica', class: 'replica', hidden: true});
  const popover = el('div', {id: 'gpu-popover', class: 'popover', role: 'dialog',
    'aria-modal': 'false', 'aria-labelledby': 'gpu-popover-title', hidden: true});
  main.append(
    el('h1', null, 'Cluster'),
    replica,
    queues,
    el('div', {class: 'toolbar'},
      el('label', {for: 'cluster-filter'}, 'Filter nodes'), filter, status),
    el('p', {class: 'legend'}, 'Each GPU: the top bar is the compute reserved ' +
      '(of 1000 milli), the lower, hatched bar the memory reserved; the number counts ' +
      'its jobs. Click it, or Enter or Space on it, to list them.'),
    pools, popover);
  document.title = 'Cluster – tessera console';

  let filterTimer = 0;
  filter.addEventListener('input', () => {
    clearTimeout(filterTimer);
    filterTimer = setTimeout(() => {
      view.filter = filter.value.trim().toLowerCase();
      view.pages.clear();
      render();
    }, 120);
  });

  function onKey(event) {
    if (event.key === 'Escape' && !popover.hidden) {
      event.preventDefault();
      closePopover(true);
    }
  }
  function onDocClick(event) {
    if (popover.hidden) return;
    if (popover.contains(event.target)) return;
    if (event.target.closest && event.target.closest('.gpu')) return;
    closePopover(false);
  }
  document.addEventListener('keydown', onKey);
  document.addEventListener('click', onDocClick);

  // The GPUs grouped: pool -> node -> GPUs, in the cluster's order.
  function grouped() {
    const byPool = new Map();
    for (const p of view.cluster.pools) byPool.set(p.name, {info: p, nodes: new Map()});
    for (const g of view.cluster.gpus) {
      let pool = byPool.get(g.pool);
      if (!pool) {
        pool = {info: {name: g.pool}, nodes: new Map()};
        byPool.set(g.pool, pool);
      }
      let node = pool.nodes.get(g.node);
      if (!node) {
        node = {name: g.node, gpus: [], drained: false};
        pool.nodes.set(g.node, node);
      }
      node.gpus.push(g);
      if (g.drained) node.drained = true;
    }
    return byPool;
  }

  function matches(node) {
    if (!view.filter) return true;
    for (const term of view.filter.split(/\s+/)) {
      const busy = node.gpus.some((g) => g.reserved_milli > 0 || g.reserved_memory_mib > 0);
      if (term === 'busy' ? busy :
        term === 'free' ? !busy :
        term === 'drained' ? node.drained :
        node.name.toLowerCase().includes(term) ||
        node.gpus.some((g) => String(g.kind).toLowerCase().includes(term))) {
        continue;
      }
      return false;
    }
    return true;
  }

  function render() {
    if (!view.cluster) return;
    keepFocus(pools, draw);
  }

  function draw() {
    const byPool = grouped();
    const out = [];
    let shown = 0;
    let total = 0;
    let matched = 0;
    for (const pool of byPool.values()) {
      const nodes = [...pool.nodes.values()];
      total += nodes.length;
      const hits = nodes.filter(matches);
      matched += hits.length;
      const section = renderPool(pool, nodes, hits);
      shown += section.shown;
      out.push(section.node);
    }
    clear(pools).append(...out);
    const unisolated = view.cluster.share_unisolated &&
      view.cluster.gpus.some((g) => (g.isolation ?? 'none') === 'none');
    status.textContent = (view.filter ?
      `${matched} of ${total} nodes match, ${shown} shown` :
      `${total} nodes, ${view.cluster.gpus.length} GPUs; ${shown} nodes shown`) +
      (unisolated ? '. Some GPUs are shared with nothing isolating their jobs (share_unisolated).' : '');
    if (view.openGpu) {
      const cell = pools.querySelector(`[data-gpu="${CSS.escape(view.openGpu)}"]`);
      if (cell) openPopover(cell, false);
      else closePopover(false);
    }
    if (!view.painted) {
      // Navigation start -> the first nodes on screen (the browser tests
      // read it): rendered now, painted by the frame after the next.
      view.painted = true;
      performance.mark('cluster-rendered');
      requestAnimationFrame(() => requestAnimationFrame(() => performance.mark('cluster-painted')));
    }
  }

  function renderPool(pool, nodes, hits) {
    const name = pool.info.name;
    const id = `pool-${name.replace(/[^A-Za-z0-9_-]/g, '_')}`;
    const gpus = nodes.flatMap((n) => n.gpus);
    const milli = gpus.reduce((s, g) => s + g.reserved_milli, 0);
    const mem = gpus.reduce((s, g) => s + g.reserved_memory_mib, 0);
    const memTotal = gpus.reduce((s, g) => s + g.memory_mib, 0);
    const drained = nodes.filter((n) => n.drained).length;
    const open = !view.collapsed.has(name);
    const toggle = el('button', {type: 'button', class: 'fold', dataset: {key: `fold:${name}`},
      'aria-expanded': String(open), 'aria-controls': `${id}-body`},
    `Pool ${name}`);
    toggle.addEventListener('click', () => {
      if (view.collapsed.has(name)) view.collapsed.delete(name);
      else view.collapsed.add(name);
      render();
    });
    const totals = el('dl', {class: 'totals'},
      term('Policy', pool.info.policy ?? '–'),
      term('Nodes', `${nodes.length}${drained ? ` (${drained} drained)` : ''}`),
      term('GPUs', gpus.length),
      term('Compute reserved', `${milli} of ${gpus.length * 1000} milli`),
      term('Memory reserved', `${mib(mem)} of ${mib(memTotal)}`),
      term('Queued', pool.info.queued ?? 0),
      term('Running', (pool.info.running ?? 0) + (pool.info.starting ?? 0)));
    const section = el('section', {class: 'pool', 'aria-labelledby': `${id}-h`},
      el('h2', {id: `${id}-h`}, toggle), totals);
    let shown = 0;
    if (open) {
      const limit = view.pages.get(name) ?? PAGE;
      const page = hits.slice(0, limit);
      shown = page.length;
      const body = el('div', {id: `${id}-body`});
      if (!hits.length) {
        body.append(el('p', {class: 'empty'}, 'No node of this pool matches the filter.'));
      } else {
        body.append(el('ul', {class: 'nodes', 'aria-label': `Nodes of pool ${name}`},
          page.map(renderNode)));
      }
      if (hits.length > page.length) {
        const more = el('button', {type: 'button', class: 'more', dataset: {key: `more:${name}`}},
          `Show ${Math.min(PAGE, hits.length - page.length)} more of pool ${name} ` +
          `(${page.length} of ${hits.length} shown)`);
        more.addEventListener('click', () => {
          view.pages.set(name, limit + PAGE);
          render();
        });
        body.append(more);
      }
      section.append(body);
    }
    return {node: section, shown};
  }

  function renderNode(node) {
    const kinds = [...new Set(node.gpus.map((g) => g.kind))].join(', ');
    const head = el('div', {class: 'node-head'},
      el('h3', {class: 'node-name'}, node.name),
      el('span', {class: 'kind'}, `${node.gpus.length} × ${kinds}`),
      node.drained ? el('span', {class: 'badge drained'}, 'Drained') : null);
    if (ctx.user.admin) {
      const action = node.drained ? 'undrain' : 'drain';
      const label = node.drained ? 'Undrain' : 'Drain';
      const button = el('button', {type: 'button', class: 'drain',
        'aria-label': `${label} node ${node.name}`,
        dataset: {node: node.name, key: `drain:${node.name}`}}, label);
      button.addEventListener('click', () => drain(node.name, action, button));
      head.append(button);
    }
    return el('li', {class: node.drained ? 'node drained' : 'node', dataset: {node: node.name}},
      head, el('div', {class: 'gpus'}, node.gpus.map(renderGpu)));
  }

  // How the GPU's fractions are kept apart (docs/operations.md,
  // "Isolation"): "isolated by MPS", "no isolation: one job at a time",
  // "no isolation, shared anyway".
  function isolation(g) {
    if (g.isolation && g.isolation !== 'none') return `isolated by ${g.isolation.toUpperCase()}`;
    return g.shareable === false ? 'no isolation: one job at a time' : 'no isolation, shared anyway';
  }

  // What NVML measured on it, when the service measures: ", 5 GiB used, 63% busy".
  function measured(g) {
    return g.used_memory_mib === undefined ? '' :
      `, ${mib(g.used_memory_mib)} used, ${g.utilization_pct}% busy`;
  }

  function renderGpu(g) {
    const milliPct = Math.min(100, g.reserved_milli / 10);
    const memPct = g.memory_mib ? Math.min(100, 100 * g.reserved_memory_mib / g.memory_mib) : 0;
    const jobs = g.jobs.length;
    const label = `${g.id}: ${g.reserved_milli} of 1000 milli, ` +
      `${mib(g.reserved_memory_mib)} of ${mib(g.memory_mib)} reserved${measured(g)}, ` +
      `${jobs} ${jobs === 1 ? 'job' : 'jobs'}, ${isolation(g)}${g.drained ? ', drained' : ''}`;
    const cell = el('button', {type: 'button', class: 'gpu', 'aria-label': label,
      'aria-haspopup': 'dialog', 'aria-expanded': 'false',
      title: jobs ? `${label}: ${g.jobs.map((id) => `#${id}`).join(', ')}` : label,
      dataset: {gpu: g.id, key: `gpu:${g.id}`}},
    el('span', {class: 'gpu-name', 'aria-hidden': 'true'}, g.id.split('/').pop()),
    bar('milli', milliPct),
    bar('mem', memPct),
    el('span', {class: 'gpu-jobs', 'aria-hidden': 'true'}, jobs ? `${jobs}▪` : ''));
    cell.addEventListener('click', () => {
      if (view.openGpu === g.id) closePopover(true);
      else openPopover(cell, true);
    });
    return cell;
  }

  function bar(kind, pct) {
    return el('span', {class: `bar bar-${kind}`, 'aria-hidden': 'true'},
      el('span', {class: 'fill', style: {width: `${pct.toFixed(1)}%`}}));
  }

  function gpuById(id) {
    return view.cluster.gpus.find((g) => g.id === id);
  }

  function openPopover(cell, focus) {
    const g = gpuById(cell.dataset.gpu);
    if (!g) return;
    for (const c of pools.querySelectorAll('.gpu[aria-expanded="true"]')) {
      c.setAttribute('aria-expanded', 'false');
    }
    cell.setAttribute('aria-expanded', 'true');
    view.openGpu = g.id;
    const close = el('button', {type: 'button', class: 'close', 'aria-label': 'Close the job list'}, '×');
    close.addEventListener('click', () => closePopover(true));
    const items = g.jobs.map((id) => {
      const job = view.jobs.get(id);
      const share = job && job.allocation ?
        job.allocation.filter((a) => a.gpu === g.id)
          .map((a) => `${a.gpu_milli} milli + ${mib(a.gpu_memory_mib)}`).join(', ') : '';
      return el('li', null, jobLink(id, `#${id}${job ? ` ${job.name || ''}` : ''}`),
        job ? ` — ${job.user}` : '', share ? ` — ${share}` : '');
    });
    clear(popover).append(
      el('div', {class: 'popover-head'},
        el('h2', {id: 'gpu-popover-title'}, `Jobs on ${g.id}`), close),
      el('p', null, `${g.kind}, ${g.reserved_milli} of 1000 milli, ` +
        `${mib(g.reserved_memory_mib)} of ${mib(g.memory_mib)} reserved${measured(g)}` +
        `${g.exclusive ? ', exclusive' : ''}${g.drained ? ', drained' : ''}; ${isolation(g)}.`),
      items.length ? el('ul', {class: 'popover-jobs'}, items) :
        el('p', null, 'No job on this GPU.'));
    popover.hidden = false;
    const r = cell.getBoundingClientRect();
    const m = main.getBoundingClientRect();
    popover.style.left = `${Math.max(0, Math.min(r.left - m.left, m.width - 340))}px`;
    popover.style.top = `${r.bottom - m.top + 4}px`;
    if (focus) (popover.querySelector('a') || close).focus();
  }

  function closePopover(refocus) {
    const id = view.openGpu;
    view.openGpu = null;
    popover.hidden = true;
    if (!id) return;
    const cell = pools.querySelector(`[data-gpu="${CSS.escape(id)}"]`);
    if (cell) {
      cell.setAttribute('aria-expanded', 'false');
      if (refocus) cell.focus();
    }
  }

  async function drain(node, action, button) {
    const question = action === 'drain' ?
      `Drain node ${node}? No new job will start on it; running jobs keep running.` :
      `Undrain node ${node}? Jobs may start on it again.`;
    if (!window.confirm(question)) return;
    button.disabled = true;
    try {
      const r = await api.post(`/v1/nodes/${encodeURIComponent(node)}/${action}`);
      ctx.announce(`Node ${r.node} ${r.drained ? 'drained' : 'undrained'}.`);
      status.textContent = `Node ${r.node} ${r.drained ? 'drained' : 'undrained'}.`;
      await refresh();
    } catch (e) {
      button.disabled = false;
      status.textContent = `Could not ${action} ${node}: ${e.message}`;
    }
  }

  async function refresh() {
    const first = !view.cluster;
    const cluster = api.getJson('/v1/cluster');
    const jobs = Promise.all([
      api.getJson('/v1/jobs?state=running&limit=100000'),
      api.getJson('/v1/jobs?state=starting&limit=100000'),
    ]);
    jobs.catch(() => {});  // awaited below; not unhandled if the cluster fails
    const c = await cluster;
    if (c.changed || first) renderReplica(replica, c.data.replica, ctx.user.admin);
    if ((c.changed || first) && !sameButForReplica(view.cluster, c.data)) {
      view.cluster = c.data;
      const tree = renderQueues(c.data.queues);
      clear(queues);
      if (tree) queues.append(tree);
      render();
    }
    const [running, starting] = await jobs;
    if (running.changed || starting.changed) {
      view.jobs = new Map();
      for (const j of [...running.data.jobs, ...starting.data.jobs]) view.jobs.set(j.id, j);
      if (view.openGpu) {
        const cell = pools.querySelector(`[data-gpu="${CSS.escape(view.openGpu)}"]`);
        if (cell) openPopover(cell, false);
      }
    }
  }

  return {
    refresh,
    destroy() {
      clearTimeout(filterTimer);
      document.removeEventListener('keydown', onKey);
      document.removeEventListener('click', onDocClick);
    },
  };
}

// GET /v1/cluster's "replica" (docs/operations.md, "High availability"):
// "Leader: replica r2 (http://10.0.0.2:8080) since 2026-11-30 12:24:51.
// [Follower] This page comes from replica r1, a follower: its view of the
// jobs is 0.2 s old." Nothing for a service alone.
function renderReplica(node, r, admin) {
  clear(node);
  node.hidden = !(r && r.replicated);
  if (node.hidden) return;
  const leader = r.leader;
  if (leader) {
    const since = new Date(leader.since * 1000);
    // Only an http(s) address becomes a link (to the leader's console).
    const address = /^https?:\/\//.test(leader.address) ?
      el('a', {href: `${leader.address}/`}, leader.address) : leader.address;
    append(node, ['Leader: replica ', el('strong', null, leader.name), ' (', address, ')',
      isNaN(since) ? '' :
        [' since ', el('time', {datetime: since.toISOString()}, localTime(since))],
      '. ']);
  } else {
    append(node, [el('strong', null, 'No replica leads now'),
      ' (a failover is under way: one takes over within the lease). ']);
  }
  if (r.role === 'leader') {
    append(node, [`This page comes from replica ${r.name}, the leader.`]);
    return;
  }
  // A follower sends a drain to the leader (307), which the console
  // does not follow (api.js): the leader's own console drains.
  const age = Number(r.view_age_s ?? 0).toFixed(1);
  append(node, [el('span', {class: 'badge follower'}, 'Follower'),
    ` This page comes from replica ${r.name}, a follower: its view of the jobs is ` +
    `${age} s old.`, admin ? ' Drain and undrain nodes on the leader\'s console.' : '']);
}

// A follower's answer changes at every poll (its view's age, in
// "replica"): the pools are drawn again only when something else did.
function sameButForReplica(before, after) {
  if (!before || after.replica?.role !== 'follower') return false;
  const {replica: replicaBefore, ...restBefore} = before;
  const {replica: replicaAfter, ...restAfter} = after;
  void replicaBefore;
  void replicaAfter;
  return JSON.stringify(restBefore) === JSON.stringify(restAfter);
}

function term(name, value) {
  return el('div', null, el('dt', null, name), el('dd', null, String(value)));
}
