// The console's calls to the tessera API: the bearer token (kept in
// sessionStorage only: never a URL, localStorage or a cookie), ETag'd
// polling (If-None-Match; a 304 reuses the last body) and the errors. A
// redirect (a follower replica's 307 to the leader) is never followed.

const TOKEN_KEY = 'tessera.token';

export function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
  cache.clear();
}

// An answer other than 2xx/304. `status` 0: the service did not answer.
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
  // Network errors and 5xx: the service is unreachable or failing.
  get unreachable() {
    return this.status === 0 || this.status >= 500;
  }
}

// Hooks the app sets: a 401 (back to the login view) and every answer or
// failure (the unreachable banner).
export const hooks = {
  unauthorized: () => {},
  reachable: () => {},
  unreachable: () => {},
};

// url -> {etag, body, text, headers}: the last answer of each polled GET.
const cache = new Map();

async function send(method, path, {headers = {}, body, quiet401 = false} = {}) {
  const h = {...headers};
  const t = token();
  if (t) h.Authorization = `Bearer ${t}`;
  let res;
  try {
    res = await fetch(path, {method, headers: h, body, cache: 'no-store',
                             credentials: 'omit', redirect: 'manual'});
  } catch (e) {
    const err = new ApiError(0, 'the service did not answer');
    hooks.unreachable(err);
    throw err;
  }
  if (res.type === 'opaqueredirect') {
    // A follower replica sends what only the leader does to the leader
    // (307, another origin): not followed, the token stays here.
    hooks.reachable();
    throw new ApiError(307, 'this replica follows; the leading replica does that ' +
      '(open the console at the leader\'s address)');
  }
  if (res.status >= 500) {
    const err = new ApiError(res.status, await errorText(res));
    hooks.unreachable(err);
    throw err;
  }
  hooks.reachable();
  if (res.status === 401 && !quiet401) {
    const err = new ApiError(401, await errorText(res));
    hooks.unauthorized(err.message);
    throw err;
  }
  return res;
}

async function errorText(res) {
  try {
    const j = await res.json();
    if (j && j.error) return j.error;
  } catch (e) {
    // not JSON
  }
  return `${res.status} ${res.statusText}`;
}

// GET path as JSON with the ETag cache: {data, changed}.
export async function getJson(path) {
  const prev = cache.get(path);
  const headers = {};
  if (prev && prev.etag) headers['If-None-Match'] = prev.etag;
  const res = await send('GET', path, {headers});
  if (res.status === 304 && prev) return {data: prev.body, changed: false};
  if (!res.ok) throw new ApiError(res.status, await errorText(res));
  const body = await res.json();
  const etag = res.headers.get('ETag');
  cache.set(path, {etag, body});
  return {data: body, changed: true};
}

// GET path as text (logs, SVG), no cache: {text, headers}.
export async function getText(path) {
  const res = await send('GET', path);
  if (!res.ok) throw new ApiError(res.status, await errorText(res));
  return {text: await res.text(), headers: res.headers};
}

export async function post(path, json) {
  const res = await send('POST', path, {
    headers: json === undefined ? {} : {'Content-Type': 'application/json'},
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  if (!res.ok) throw new ApiError(res.status, await errorText(res));
  return res.json();
}

// Checks a token: the user {user, team, admin} or an ApiError (401: wrong
// token). Does not trigger the 401 hook.
export async function whoami(candidate) {
  const res = await fetch('/v1/whoami', {
    headers: {Authorization: `Bearer ${candidate}`}, cache: 'no-store',
    credentials: 'omit',
  }).catch(() => null);
  if (!res) throw new ApiError(0, 'the service did not answer');
  if (!res.ok) throw new ApiError(res.status, await errorText(res));
  return res.json();
}
