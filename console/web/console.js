// The console's shell, the module index.html loads: login, the header,
// hash routing (#/cluster, #/queue, #/jobs/ID), the polling loop (every
// 2 s, the visible view only, paused while the tab is hidden) and the
// "service unreachable" banner.
import * as api from './api.js';
import {el, clear, clock} from './util.js';
import {mountCluster} from './cluster.js';
import {mountQueue} from './queue.js';
import {mountJob} from './job.js';

const POLL_MS = 2000;
const MAX_BACKOFF_MS = 15000;

const main = document.getElementById('main');
const banner = document.getElementById('banner');
const who = document.getElementById('who');
const nav = document.getElementById('nav');
const logoutButton = document.getElementById('logout');
const live = document.getElementById('live');

const state = {
  user: null,        // {user, team, admin}
  view: null,        // {refresh(), destroy()}
  timer: 0,
  running: false,
  again: false,
  delay: POLL_MS,
  failingSince: null,
  failedThisTick: false,
};

// Says something that matters to screen readers (aria-live="polite").
export function announce(text) {
  live.textContent = '';
  // A new text node after a tick, so the same message is announced again.
  setTimeout(() => { live.textContent = text; }, 50);
}

api.hooks.unauthorized = (message) => {
  logout(`The service refused the token (${message}): log in again.`);
};
api.hooks.unreachable = () => {
  state.failedThisTick = true;
  if (state.failingSince) return;
  state.failingSince = new Date();
  clear(banner).append(
    el('strong', null, 'Service unreachable'),
    ` since ${clock(state.failingSince)} — retrying. `,
    'The page shows the last data it received, marked stale.');
  banner.hidden = false;
  document.body.classList.add('stale');
};
api.hooks.reachable = () => {
  if (!state.failingSince) return;
  state.failingSince = null;
  state.delay = POLL_MS;
  banner.hidden = true;
  clear(banner);
  document.body.classList.remove('stale');
  announce('The service answers again.');
};

function ctx() {
  return {user: state.user, announce, refreshNow: () => poll()};
}

function route() {
  const hash = location.hash || '#/cluster';
  if (!state.user) {
    showLogin();
    return;
  }
  if (hash === '#/login') {
    location.replace('#/cluster');
    return;
  }
  let match;
  let mount;
  let current;
  if (hash === '#/cluster') {
    mount = (m) => mountCluster(m, ctx());
    current = '#/cluster';
  } else if (hash === '#/queue') {
    mount = (m) => mountQueue(m, ctx());
    current = '#/queue';
  } else if ((match = /^#\/jobs\/(\d+)$/.exec(hash))) {
    mount = (m) => mountJob(m, ctx(), Number(match[1]));
  } else {
    location.replace('#/cluster');
    return;
  }
  for (const a of nav.querySelectorAll('a')) {
    if (a.getAttribute('href') === current) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  setView(mount);
}

function setView(mount) {
  if (state.view) state.view.destroy();
  clear(main);
  state.view = mount(main);
  state.delay = POLL_MS;
  poll();
}

// One round of polling of the visible view; the next is scheduled after it.
async function poll() {
  clearTimeout(state.timer);
  if (document.hidden || !state.view) return;
  if (state.running) {
    state.again = true;
    return;
  }
  const view = state.view;
  state.running = true;
  state.failedThisTick = false;
  try {
    await view.refresh();
  } catch (e) {
    if (!(e instanceof api.ApiError)) console.error(e);  // a bug of ours
  } finally {
    state.running = false;
  }
  if (state.again || view !== state.view) {
    // Asked again meanwhile (a new view, the tab shown): at once.
    state.again = false;
    poll();
    return;
  }
  if (state.failedThisTick) {
    state.delay = Math.min(state.delay * 2, MAX_BACKOFF_MS);
  } else {
    state.delay = POLL_MS;
  }
  if (!document.hidden) {
    state.timer = setTimeout(poll, state.failingSince ? state.delay : POLL_MS);
  }
}

document.addEventListener('visibilitychange', () => {
  if (document.hidden) clearTimeout(state.timer);
  else poll();
});

function showUser() {
  clear(who);
  if (!state.user) {
    who.hidden = true;
    nav.hidden = true;
    logoutButton.hidden = true;
    return;
  }
  who.hidden = false;
  nav.hidden = false;
  logoutButton.hidden = false;
  who.append('Logged in as ', el('strong', {id: 'who-user'}, state.user.user),
    state.user.team ? ` (team ${state.user.team})` : '',
    state.user.admin ? el('span', {class: 'badge admin'}, 'admin') : '');
}

function showLogin(message) {
  if (state.view) state.view.destroy();
  state.view = null;
  clearTimeout(state.timer);
  clear(main);
  const error = el('p', {id: 'login-error', class: 'error', role: 'alert'});
  if (message) error.textContent = message;
  const input = el('input', {id: 'token', name: 'token', type: 'password',
    autocomplete: 'off', required: true, spellcheck: 'false',
    'aria-describedby': 'token-help login-error'});
  const button = el('button', {type: 'submit', class: 'primary'}, 'Log in');
  const form = el('form', {id: 'login', class: 'login', 'aria-labelledby': 'login-title'},
    el('h1', {id: 'login-title'}, 'Log in to tessera'),
    el('label', {for: 'token'}, 'Bearer token'),
    input,
    el('p', {id: 'token-help', class: 'help'},
      'The token your administrator gave you (the one tessera submit uses). ',
      'It is kept in this tab’s session storage only and forgotten when ',
      'the tab closes or you log out.'),
    button, error);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const candidate = input.value.trim();
    if (!candidate) return;
    button.disabled = true;
    error.textContent = '';
    try {
      const user = await api.whoami(candidate);
      api.setToken(candidate);
      state.user = user;
      showUser();
      announce(`Logged in as ${user.user}`);
      if (!location.hash || location.hash === '#/login') location.replace('#/cluster');
      route();
      main.focus();
    } catch (e) {
      error.textContent = e.status === 401 ?
        'That token was refused: check it and try again.' :
        `Could not log in: ${e.message}`;
      input.focus();
      input.select();
    } finally {
      button.disabled = false;
    }
  });
  main.append(form);
  document.title = 'Log in – tessera console';
  input.focus();
}

function logout(message) {
  api.setToken(null);
  state.user = null;
  showUser();
  showLogin(message);
}

logoutButton.addEventListener('click', () => {
  logout('');
  announce('Logged out');
});

window.addEventListener('hashchange', route);
// The skip link focuses <main> itself: its href would be a route.
document.querySelector('.skip').addEventListener('click', (event) => {
  event.preventDefault();
  main.focus();
});

async function boot() {
  const saved = api.token();
  if (!saved) {
    showUser();
    showLogin();
    return;
  }
  try {
    state.user = await api.whoami(saved);
    api.hooks.reachable();
  } catch (e) {
    if (e.status === 0 || e.status >= 500) {
      api.hooks.unreachable(e);
      setTimeout(boot, Math.min(state.delay *= 2, MAX_BACKOFF_MS));
      return;
    }
    api.setToken(null);
    showUser();
    showLogin('The saved token was refused: log in again.');
    return;
  }
  showUser();
  route();
}

boot();
