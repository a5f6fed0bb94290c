// The job page: its state and request, allocation, the split-or-wait
// decision, a split job's plan, the events (who did what), the live tail of
// stdout and stderr, and cancel when the user may (owner or admin, job not
// ended).
import * as api from './api.js';
import {el, clear, mib, demand, duration, localTime, stateBadge, table, TERMINAL, keepFocus}
  from './util.js';
import {planSection} from './plan.js';

const MAX_LOG_CHARS = 2 * 1024 * 1024;  // the tail kept on the page

export function mountJob(main, ctx, id) {
  const view = {job: null, planShown: false, events: null};
  const title = el('h1', null, `Job #${id}`);
  const actions = el('div', {class: 'actions'});
  const message = el('p', {id: 'job-message', class: 'status', 'aria-live': 'polite'});
  const summary = el('div', {id: 'job-summary'});
  const decision = el('div', {id: 'job-decision'});
  const request = el('section', {id: 'job-request', 'aria-labelledby': 'request-h'});
  const allocation = el('section', {id: 'job-allocation', 'aria-labelledby': 'alloc-h'});
  const plan = el('div', {id: 'job-plan'});
  const events = el('section', {id: 'job-events', 'aria-labelledby': 'events-h'},
    el('h2', {id: 'events-h'}, 'Events'));
  const logs = logTail(id);
  main.append(el('div', {class: 'job-head'}, title, actions), message, summary,
    decision, request, allocation, plan, logs.node, events);
  document.title = `Job ${id} – tessera console`;

  function renderJob(job) {
    clear(title).append(`Job #${job.id}`, job.name ? `: ${job.name}` : '', ' ',
      stateBadge(job.state));
    document.title = `Job ${job.id}${job.name ? ` (${job.name})` : ''} – tessera console`;
    renderActions(job);
    renderSummary(job);
    renderDecision(job.decision);
    renderRequest(job.request || {});
    clear(allocation).append(el('h2', {id: 'alloc-h'}, 'Allocation'),
      job.allocation && job.allocation.length ?
        table(null, ['GPU', 'Compute', 'Memory'], job.allocation.map((a) =>
          [a.gpu, `${a.gpu_milli} milli`, mib(a.gpu_memory_mib)]), {class: 'allocation'}) :
        el('p', {class: 'empty'}, TERMINAL.has(job.state) ? 'Nothing held: the job ended.' :
          'Nothing reserved yet.'));
    if (job.plan && !view.planShown) {
      view.planShown = true;
      clear(plan).append(planSection(job));
    }
  }

  // The facts, every round (the running time moves without a new ETag).
  function renderSummary(job) {
    const ran = job.started_at ?
      ((job.finished_at ? Date.parse(job.finished_at) : Date.now()) - Date.parse(job.started_at)) / 1000 :
      null;
    clear(summary).append(el('dl', {class: 'facts'},
      fact('State', stateBadge(job.state)),
      fact('User', `${job.user}${job.team ? ` (team ${job.team})` : ''}`),
      fact('Pool', job.pool),
      fact('Priority', String(job.priority)),
      fact('Demand', `${demand(job.demand)}${job.demand && job.demand.cpu_milli ?
        `, ${job.demand.cpu_milli} CPU milli` : ''}${job.demand && job.demand.memory_mib ?
        `, ${mib(job.demand.memory_mib)} host memory` : ''}`),
      fact('Submitted', localTime(job.submitted_at)),
      fact('Started', localTime(job.started_at)),
      fact('Finished', localTime(job.finished_at)),
      ran !== null ? fact(job.finished_at ? 'Ran for' : 'Running for', duration(ran)) : null,
      fact('Node', job.node || '–'),
      job.exit_code !== null && job.exit_code !== undefined ? fact('Exit code', String(job.exit_code)) : null,
      job.reason ? fact('Reason', job.reason) : null,
      job.restarts ? fact('Restarts', String(job.restarts)) : null,
      job.sized_by ? fact('Sized by', job.sized_by) : null,
      job.usage ? fact('GPU use', gpuUse(job)) : null,
      job.oom_requeues ? fact('Out of memory',
        `put back ${job.oom_requeues} time${job.oom_requeues === 1 ? '' : 's'} with more memory`) : null));
  }

  // "reserved 8 GiB, used at most 6.1 GiB (now 5.9 GiB), GPU busy 71%".
  function gpuUse(job) {
    const u = job.usage;
    const reserved = (job.allocation || []).reduce((s, a) => s + a.gpu_memory_mib, 0);
    return `${reserved ? `reserved ${mib(reserved)}, ` : ''}used at most ${mib(u.peak_mib)} ` +
      `(now ${mib(u.last_mib)}), GPU busy ${Math.round(u.mean_utilization_pct)}%`;
  }

  function renderActions(job) {
    clear(actions);
    const mayCancel = (job.user === ctx.user.user || ctx.user.admin) && !TERMINAL.has(job.state);
    if (!mayCancel) return;
    const b = el('button', {type: 'button', id: 'cancel-job', class: 'danger',
      dataset: {key: 'cancel-job'}}, 'Cancel job');
    b.addEventListener('click', async () => {
      if (!window.confirm(`Cancel job ${job.id}${job.name ? ` (${job.name})` : ''}?`)) return;
      b.disabled = true;
      try {
        const after = await api.post(`/v1/jobs/${job.id}/cancel`);
        message.textContent = `Job ${after.id} is ${after.state}.`;
        ctx.announce(message.textContent);
        await refresh();
      } catch (e) {
        b.disabled = false;
        message.textContent = `Cancel refused: ${e.message}`;
      }
    });
    actions.append(b);
  }

  function renderDecision(d) {
    clear(decision);
    if (!d) return;
    const options = (d.options || []).map((o) => [o.option, o.where || '–',
      localTime(new Date(o.start_s * 1000).toISOString()),
      localTime(new Date(o.finish_s * 1000).toISOString()),
      `×${Number(o.slowdown).toFixed(2)}`, String(o.sharing_with),
      duration(o.cost_to_others_s)]);
    decision.append(el('section', {'aria-labelledby': 'decision-h'},
      el('h2', {id: 'decision-h'}, 'Split or wait'),
      el('p', {class: 'decision-summary'}, d.summary || ''),
      el('p', null, `Chosen: ${d.chosen ?? 'nothing fits'}; work ${duration(d.work_s)} ` +
        `on one whole GPU (from ${d.work_from}); interference ${d.interference}.`),
      table('Options forecast', ['Option', 'Where', 'Starts', 'Ends', 'Slowdown',
        'Sharing with', 'Cost to others'], options)));
  }

  function renderRequest(r) {
    const items = [];
    if (r.command) {
      const f = fact('Command', el('code', null, r.command.map(shellQuote).join(' ')));
      f.classList.add('wide');
      items.push(f);
    }
    if (r.resources) items.push(fact('Resources', demand(r.resources)));
    if (r.model) {
      const m = r.model;
      const f = fact('Model', `${m.path || (m.upload ? `upload ${m.upload}` : '–')}` +
        `${m.batch ? `, batch ${m.batch}` : ''}${m.train ? ', training' : ', inference'}` +
        `${m.dtype ? `, ${m.dtype}` : ''}`);
      f.classList.add('wide');
      items.push(f);
    }
    if (r.splittable !== undefined) items.push(fact('Splittable', r.splittable ? 'yes' : 'no'));
    if (r.time_limit_s) items.push(fact('Time limit', duration(r.time_limit_s)));
    if (r.work && r.work.steps) items.push(fact('Work', `${r.work.steps} steps`));
    if (r.preemptible) items.push(fact('Preemptible', 'yes'));
    if (r.env && Object.keys(r.env).length) {
      items.push(fact('Environment', Object.entries(r.env).map(([k, v]) => `${k}=${v}`).join(' ')));
    }
    clear(request).append(el('h2', {id: 'request-h'}, 'Request'),
      el('dl', {class: 'facts'}, items),
      el('details', null, el('summary', null, 'Raw request JSON'),
        el('pre', {class: 'raw'}, JSON.stringify(r, null, 2))));
  }

  function renderEvents(list) {
    clear(events).append(el('h2', {id: 'events-h'}, 'Events'),
      list.length ? table(null, ['When', 'Who', 'Action', 'Detail'], list.map((e) =>
        [localTime(e.at), `${e.actor}${e.token ? ` (token ${e.token})` : ''}`,
          e.action, e.detail || ''])) : el('p', {class: 'empty'}, 'No events.'));
  }

  async function refresh() {
    let j;
    try {
      j = await api.getJson(`/v1/jobs/${id}`);
    } catch (e) {
      if (e.status === 404 || e.status === 403) {
        clear(summary).append(el('p', {class: 'error'}, `Job ${id}: ${e.message}`));
      }
      throw e;
    }
    const before = view.job ? view.job.state : null;
    if (j.changed || !view.job) {
      view.job = j.data;
      keepFocus(main, () => renderJob(j.data));
      if (before && before !== j.data.state) ctx.announce(`Job ${id} is ${j.data.state}.`);
    } else if (!TERMINAL.has(view.job.state)) {
      renderSummary(view.job);
    }
    const [ev] = await Promise.all([
      api.getJson(`/v1/jobs/${id}/events`),
      logs.poll(TERMINAL.has(view.job.state)),
    ]);
    if (ev.changed || !view.events) {
      view.events = ev.data.events;
      renderEvents(view.events);
    }
  }

  return {refresh, destroy() {}};
}

// An argument as a shell would need it: 'quoted' unless plain.
function shellQuote(arg) {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, "'\\''")}'`;
}

function fact(name, value) {
  return el('div', null, el('dt', null, name), el('dd', null, value));
}

// The stdout and stderr tabs, each read by offset; the view follows the
// end unless the reader scrolled up.
function logTail(id) {
  const streams = ['stdout', 'stderr'];
  const state = {active: 'stdout', offset: {stdout: 0, stderr: 0},
    size: {stdout: 0, stderr: 0}, done: {stdout: false, stderr: false}};
  const tabs = el('div', {role: 'tablist', 'aria-label': 'Log streams', class: 'tabs'});
  const panes = {};
  const buttons = {};
  for (const s of streams) {
    buttons[s] = el('button', {type: 'button', role: 'tab', id: `tab-${s}`,
      'aria-controls': `log-${s}`, 'aria-selected': String(s === state.active),
      tabindex: s === state.active ? '0' : '-1'}, s);
    panes[s] = el('pre', {id: `log-${s}`, class: 'log', role: 'tabpanel', tabindex: '0',
      'aria-labelledby': `tab-${s}`, hidden: s !== state.active});
    buttons[s].addEventListener('click', () => select(s));
    buttons[s].addEventListener('keydown', (event) => {
      if (event.key !== 'ArrowRight' && event.key !== 'ArrowLeft') return;
      const other = streams[(streams.indexOf(s) + 1) % 2];
      select(other);
      buttons[other].focus();
    });
    tabs.append(buttons[s]);
  }
  const follow = el('p', {class: 'status', id: 'log-follow'}, 'Following the end of the log.');
  const node = el('section', {id: 'job-logs', 'aria-labelledby': 'logs-h'},
    el('h2', {id: 'logs-h'}, 'Logs'), tabs, panes.stdout, panes.stderr, follow);
  for (const s of streams) {
    panes[s].addEventListener('scroll', () => {
      follow.textContent = atEnd(panes[s]) ? 'Following the end of the log.' :
        'Scrolled up: not following (scroll to the end to follow again).';
    });
  }

  function select(s) {
    state.active = s;
    for (const t of streams) {
      buttons[t].setAttribute('aria-selected', String(t === s));
      buttons[t].tabIndex = t === s ? 0 : -1;
      panes[t].hidden = t !== s;
    }
    poll(false).catch(() => {});  // the next round retries
  }

  function atEnd(pane) {
    return pane.scrollTop + pane.clientHeight >= pane.scrollHeight - 4;
  }

  // Reads what the active stream has past its offset (once more after the
  // job ended, then no more).
  async function poll(ended) {
    const s = state.active;
    if (state.done[s]) return;
    const {text, headers} = await api.getText(
      `/v1/jobs/${id}/logs?stream=${s}&offset=${state.offset[s]}`);
    const next = Number(headers.get('X-Next-Offset'));
    state.offset[s] = isFinite(next) ? next : state.offset[s] + text.length;
    const size = Number(headers.get('X-Log-Size'));
    if (ended && (!isFinite(size) || state.offset[s] >= size)) state.done[s] = true;
    if (!text) return;
    const pane = panes[s];
    const follow = atEnd(pane);
    pane.append(document.createTextNode(text));
    if (pane.textContent.length > MAX_LOG_CHARS) {
      pane.textContent = pane.textContent.slice(-MAX_LOG_CHARS);
    }
    if (follow) pane.scrollTop = pane.scrollHeight;
  }

  return {node, poll};
}
