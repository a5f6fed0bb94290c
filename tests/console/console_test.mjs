// The console end to end against a real `tessera serve`: login, the queue
// and job pages following a job submitted with the CLI (log tail, cancel),
// the cluster's bars, draining as admin, the unreachable banner, keyboard
// use and accessible names; no console error or CSP violation anywhere.
//   node console_test.mjs --tessera BIN [--workdir DIR]
import {parseArgs, loadPuppeteer, startServe, openPage, newPage, login, usersYaml,
  TOKENS, assert, run, step, screenshot} from './lib.mjs';

const args = parseArgs();
const puppeteer = await loadPuppeteer();

const config = `# two nodes in two pools (the console's browser test)
log_dir: logs
pools:
  - {name: a100, policy: backfill}
  - {name: t4, policy: fifo}
nodes:
  - {name: node0, pool: a100, cpu_milli: 64000, memory: 256GiB, gpus: [{kind: a100-80gb, count: 2}]}
  - {name: node1, pool: t4, cpu_milli: 32000, memory: 128GiB, gpus: [{kind: t4, count: 2}]}
${usersYaml()}`;

const gpuLabels = (page) => page.$$eval('button.gpu', (cells) =>
  cells.map((c) => c.getAttribute('aria-label')));

await run('console', async ({onExit}) => {
  const {serve, url} = await startServe(args, config, onExit);
  const {browser, page} = await openPage(args, puppeteer, onExit);
  const urls = [];
  page.on('request', (r) => urls.push(r.url()));

  step('login: a wrong token is refused, the right one shows the user');
  await page.goto(`${url}/`, {waitUntil: 'domcontentloaded'});
  await page.waitForSelector('#token');
  await screenshot(page, args, 'login');
  await page.type('#token', 'not-a-token');
  await page.click('#login button[type="submit"]');
  await page.waitForFunction(() => /refused/.test(document.getElementById('login-error').textContent));
  assert(await page.$eval('#token', (i) => i.type) === 'password', 'the token field is a password field');
  await page.evaluate(() => { document.getElementById('token').value = ''; });
  await login(page, url, 'alice');
  const stored = await page.evaluate(() => sessionStorage.getItem('tessera.token'));
  assert(stored === TOKENS.alice, 'the token is in sessionStorage');
  assert(await page.evaluate(() => localStorage.length) === 0, 'nothing in localStorage');
  assert(await page.evaluate(() => document.cookie) === '', 'no cookie');
  assert(!(await page.$('.badge.admin')), 'alice is not shown as admin');

  step('cluster: a 250-milli job changes a GPU\'s bars');
  await page.waitForSelector('button.gpu');
  const before = await gpuLabels(page);
  assert(before.length === 4, `4 GPU cells (${before.length})`);
  assert(before.every((l) => /: 0 of 1000 milli, 0 MiB of /.test(l)), `all free: ${before}`);
  assert(await page.$eval('#cluster-replica', (p) => p.hidden && p.textContent === ''),
    'a service alone: no line about replicas');
  const frac = await serve.submit('alice', ['--name', 'frac', '--pool', 'a100', '--gpu-milli', '250',
    '--gpu-memory', '8GiB', '--', 'sleep', '120']);
  await page.waitForFunction(() => [...document.querySelectorAll('button.gpu')].some((c) =>
    /250 of 1000 milli, 8 GiB of 80 GiB reserved, 1 job/.test(c.getAttribute('aria-label'))));
  const width = await page.$$eval('button.gpu', (cells) => {
    const c = cells.find((x) => /250 of 1000/.test(x.getAttribute('aria-label')));
    return c.querySelector('.bar-milli .fill').style.width;
  });
  assert(parseFloat(width) === 25, `the compute bar is a quarter full (${width})`);
  const isolated = (await gpuLabels(page)).find((l) => /250 of 1000/.test(l));
  assert(/no isolation: one job at a time/.test(isolated),
    `the cell says nothing isolates the GPU, so it holds one job: ${isolated}`);
  step('Enter on a GPU cell opens its job list; Escape closes it');
  await page.waitForFunction(() => document.querySelector('#pools') !== null);
  await page.evaluate(() => [...document.querySelectorAll('button.gpu')]
    .find((x) => /250 of 1000/.test(x.getAttribute('aria-label'))).focus());
  await page.keyboard.press('Enter');
  await page.waitForSelector('#gpu-popover:not([hidden])');
  await page.waitForFunction((id) => document.querySelector(
    `#gpu-popover a[href="#/jobs/${id}"]`)?.textContent.includes('frac'), {}, frac.id);
  assert(await page.evaluate(() => document.getElementById('gpu-popover').contains(document.activeElement)),
    'focus moves into the job list');
  await screenshot(page, args, 'cluster');
  await page.keyboard.press('Escape');
  await page.waitForSelector('#gpu-popover[hidden]');
  assert(await page.evaluate(() => document.activeElement.classList.contains('gpu')),
    'focus returns to the GPU cell');
  assert(!(await page.$('button.drain')), 'a user sees no drain button');

  step('Tab reaches the main controls');
  const reached = new Set();
  await page.evaluate(() => document.activeElement.blur());
  for (let i = 0; i < 20; ++i) {
    await page.keyboard.press('Tab');
    reached.add(await page.evaluate(() => {
      const a = document.activeElement;
      return a.id || a.getAttribute('href') || a.className;
    }));
  }
  for (const want of ['#/cluster', '#/queue', 'logout', 'cluster-filter', 'gpu']) {
    assert(reached.has(want), `Tab reaches ${want} (reached: ${[...reached]})`);
  }

  step('queue: a job submitted with the CLI appears without a reload');
  await page.click('a[href="#/queue"]');
  await page.waitForSelector('#queue-pools table');
  const marker = await page.evaluate(() => { window.__noReload = 1; return 1; });
  const job = await serve.submit('alice', ['--name', 'tail <b>me</b>', '--pool', 't4',
    '--gpu-milli', '500', '--gpu-memory', '2GiB', '--', 'sh', '-c',
    'for i in $(seq 2000); do echo line $i; echo err $i >&2; sleep 0.05; done']);
  await page.waitForSelector(`tr[data-job="${job.id}"]`);
  // A keyboard user's focus survives the redraw that a new job brings.
  await page.focus(`tr[data-job="${job.id}"] th a`);
  const bobJob = await serve.submit('bob', ['--name', 'bobs', '--pool', 't4', '--gpus', '1',
    '--', 'sleep', '120']);
  await page.waitForSelector(`tr[data-job="${bobJob.id}"]`);
  const focusKey = await page.evaluate(() => document.activeElement.dataset.key);
  assert(focusKey === `job:${job.id}`, `the focus stays on the job's link (${focusKey})`);
  assert(await page.evaluate(() => window.__noReload) === marker, 'the page was not reloaded');
  const rowText = await page.$eval(`tr[data-job="${job.id}"]`, (r) => r.textContent);
  assert(rowText.includes('tail <b>me</b>'), `the name is shown as text: ${rowText}`);
  assert(rowText.includes('500 milli + 2 GiB'), `the demand is human: ${rowText}`);
  assert(await page.$eval(`tr[data-job="${job.id}"]`, (r) => r.classList.contains('mine')),
    'alice\'s own job is highlighted');
  assert(await page.$(`tr[data-job="${job.id}"] button.cancel`), 'a cancel button on her job');
  assert(!(await page.$(`tr[data-job="${bobJob.id}"] button.cancel`)), 'none on bob\'s job');
  const forced = await page.evaluate(async (id) => {
    const r = await fetch(`/v1/jobs/${id}/cancel`, {method: 'POST',
      headers: {Authorization: `Bearer ${sessionStorage.getItem('tessera.token')}`}});
    return r.status;
  }, bobJob.id);
  assert(forced === 403, `the API refuses alice cancelling bob's job (${forced})`);
  // Her own jobs come first in each table.
  const order = await page.$$eval('#queue-pools tr[data-job]', (rows) =>
    rows.filter((r) => r.closest('table').caption.textContent === 'Running in t4')
      .map((r) => r.classList.contains('mine')));
  assert(order.indexOf(false) === -1 || order.lastIndexOf(true) < order.indexOf(false),
    `her jobs first: ${order}`);
  // A job that waits: the pool's two GPUs are taken.
  const waiting = await serve.submit('alice', ['--name', 'two-gpus', '--pool', 't4', '--gpus', '2',
    '--time-limit', '600', '--', 'true']);
  await page.waitForSelector(`tr[data-job="${waiting.id}"]`);
  const waits = await page.$eval(`tr[data-job="${waiting.id}"]`, (r) =>
    [...r.cells].map((c) => c.textContent));
  assert(waits[0] === '1' && waits[5] === '2 GPUs', `position and demand: ${waits}`);
  assert(/\S/.test(waits[7]) && waits[7] !== '–', `why it waits: ${waits[7]}`);
  await screenshot(page, args, 'queue');
  // The filters: by user, then by state.
  await page.type('#queue-user', 'bob');
  await page.waitForFunction((id) => !document.querySelector(`tr[data-job="${id}"]`), {}, job.id);
  assert(await page.$(`tr[data-job="${bobJob.id}"]`), 'bob\'s job stays under the user filter');
  await page.select('#queue-state', 'queued');
  await page.waitForFunction(() => ![...document.querySelectorAll('#queue-pools caption')]
    .some((c) => c.textContent.startsWith('Running')));
  await page.select('#queue-state', '');
  await page.$eval('#queue-user', (i) => { i.value = ''; i.dispatchEvent(new Event('input')); });
  await page.waitForSelector(`tr[data-job="${job.id}"]`);

  step('job page: log lines arrive, cancel makes it cancelled');
  await page.click(`tr[data-job="${job.id}"] th a`);
  await page.waitForFunction(() => /line 3\n/.test(document.getElementById('log-stdout')?.textContent));
  const title = await page.$eval('h1', (h) => h.textContent);
  assert(title.includes('tail <b>me</b>'), `the name in the title is text: ${title}`);
  await page.click('#tab-stderr');
  await page.waitForFunction(() => /err 2\n/.test(document.getElementById('log-stderr').textContent));
  await page.click('#tab-stdout');
  await page.waitForFunction(() => /line 8\n/.test(document.getElementById('log-stdout').textContent));
  await screenshot(page, args, 'job');
  // Scrolled up, the tail stays where the reader is; at the end it follows.
  const lastLine = () => page.$eval('#log-stdout', (p) =>
    Number(/line (\d+)\n$/.exec(p.textContent)?.[1] ?? 0));
  await page.waitForFunction(() => /line 60\n/.test(document.getElementById('log-stdout').textContent));
  await page.$eval('#log-stdout', (p) => { p.scrollTop = 0; });
  await page.waitForFunction(() => /not following/.test(document.getElementById('log-follow').textContent));
  const upAt = await lastLine();
  await page.waitForFunction((n) => new RegExp(`line ${n}\n`).test(
    document.getElementById('log-stdout').textContent), {}, upAt + 20);
  assert(await page.$eval('#log-stdout', (p) => p.scrollTop) === 0, 'scrolled up, it stays up');
  await page.$eval('#log-stdout', (p) => { p.scrollTop = p.scrollHeight; });
  const downAt = await lastLine();
  await page.waitForFunction((n) => new RegExp(`line ${n}\n`).test(
    document.getElementById('log-stdout').textContent), {}, downAt + 20);
  assert(await page.$eval('#log-stdout', (p) => p.scrollTop + p.clientHeight >= p.scrollHeight - 4),
    'at the end, it follows the new lines');
  page.once('dialog', (d) => d.accept());
  await page.click('#cancel-job');
  await page.waitForFunction(() => document.querySelector('h1 .badge')?.textContent === 'cancelled');
  assert(!(await page.$('#cancel-job')), 'no cancel button on an ended job');
  await page.waitForFunction(() => /cancel/.test(document.getElementById('job-events').textContent));
  const api = await serve.api('alice', 'GET', `/v1/jobs/${job.id}`);
  assert(api.body.state === 'cancelled', `the API says cancelled (${api.body.state})`);
  await page.goto(`${url}/#/jobs/${bobJob.id}`);
  await page.waitForFunction(() => /bobs/.test(document.querySelector('h1').textContent));
  assert(!(await page.$('#cancel-job')), 'no cancel button on bob\'s job');

  step('accessible names of every control, on each page');
  for (const route of ['#/cluster', '#/queue', `#/jobs/${job.id}`]) {
    await page.goto(`${url}/${route}`);
    await page.waitForSelector(route === '#/cluster' ? 'button.gpu' :
      route === '#/queue' ? '#queue-pools table' : '#job-logs');
    const unnamed = await unnamedControls(page);
    assert(unnamed.length === 0, `${route}: controls without a name: ${unnamed}`);
    const headers = await page.$$eval('th', (ths) => ths.filter((t) => !t.getAttribute('scope')).length);
    assert(headers === 0, `${route}: every <th> has a scope`);
    assert(await page.$('header') && await page.$('nav') && await page.$('main'), 'landmarks');
  }

  step('admin: drain a node from the page; a user sees no drain button');
  const admin = await newPage(browser);
  await login(admin, url, 'root');
  await admin.waitForSelector('button.drain[data-node="node1"]');
  assert(await admin.$('.badge.admin'), 'root is shown as admin');
  admin.once('dialog', (d) => d.accept());
  await admin.click('button.drain[data-node="node1"]');
  await admin.waitForSelector('li.node.drained[data-node="node1"] .badge.drained');
  const cluster = await serve.api('root', 'GET', '/v1/cluster');
  assert(cluster.body.gpus.filter((g) => g.node === 'node1').every((g) => g.drained),
    'the API says node1 is drained');
  const undrain = await admin.$eval('button.drain[data-node="node1"]', (b) => b.textContent);
  assert(undrain === 'Undrain', `an Undrain button now (${undrain})`);
  // alice's tab was hidden behind root's: it did not poll; shown, it does.
  assert(await page.evaluate(() => document.hidden), 'alice\'s tab is hidden');
  await page.bringToFront();
  await page.goto(`${url}/#/cluster`);
  await page.waitForSelector('li.node.drained[data-node="node1"]');
  assert(!(await page.$('button.drain')), 'alice sees no drain button');

  step('the service stops: the banner; it comes back: the banner goes');
  await serve.stop('SIGKILL');
  await page.waitForFunction(() => {
    const b = document.getElementById('banner');
    return !b.hidden && /Service unreachable since \d\d:\d\d:\d\d/.test(b.textContent);
  }, {timeout: 10000});
  assert(await page.$eval('#banner', (b) => b.getAttribute('role')) === 'alert', 'role=alert');
  assert(await page.$('button.gpu'), 'the last data stays on the page');
  assert(await page.evaluate(() => document.body.classList.contains('stale')), 'marked stale');
  await serve.start();
  await page.waitForFunction(() => document.getElementById('banner').hidden, {timeout: 20000});
  assert(!(await page.evaluate(() => document.body.classList.contains('stale'))), 'no longer stale');

  step('the token never went into a URL; no console errors or CSP violations');
  assert(!urls.some((u) => u.includes(TOKENS.alice) || u.includes(TOKENS.root)), 'no token in a URL');
  const history = await page.evaluate(() => location.href);
  assert(!history.includes('token'), `no token in the address (${history})`);
  const problems = [...page.problems, ...admin.problems];
  assert(problems.length === 0, `no console errors: ${problems.join('; ')}`);

  step('a token refused later returns to the login view with a message');
  await page.evaluate(() => sessionStorage.setItem('tessera.token', 'revoked-token'));
  await page.waitForSelector('#token');
  const why = await page.$eval('#login-error', (p) => p.textContent);
  assert(/refused the token/.test(why), `the login view says why: ${why}`);
  await login(page, url, 'alice');
  await page.waitForSelector('button.gpu');

  step('logging out forgets the token');
  await page.click('#logout');
  await page.waitForSelector('#token');
  assert(await page.evaluate(() => sessionStorage.getItem('tessera.token')) === null, 'token gone');
  void frac;
}, args);

// The controls (input, select, button, links, tabs) whose accessible name
// is empty, by Chromium's accessibility tree.
async function unnamedControls(page) {
  const tree = await page.accessibility.snapshot({interestingOnly: true});
  const roles = new Set(['button', 'textbox', 'searchbox', 'combobox', 'link', 'tab',
    'checkbox', 'listbox', 'spinbutton']);
  const bad = [];
  const walk = (n) => {
    if (!n) return;
    if (roles.has(n.role) && !(n.name && n.name.trim())) bad.push(`${n.role}`);
    for (const c of n.children || []) walk(c);
  };
  walk(tree);
  return bad;
}
