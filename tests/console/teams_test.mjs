// The queue tree on the console's cluster page (docs/quotas.md): one node of
// two A100s, an organisation with two teams guaranteed one GPU each. Alice
// (team ml) borrows vision's idle GPU with a preemptible 2-GPU job: the
// table shows ml borrowing and vision lending. Bob (team vision) submits a
// 1-GPU job: the tree reclaims alice's job whole and the table follows
// without a reload.
//   node teams_test.mjs --tessera BIN [--workdir DIR]
import {parseArgs, loadPuppeteer, startServe, openPage, login, usersYaml,
  assert, run, step, screenshot} from './lib.mjs';

const args = parseArgs();
const puppeteer = await loadPuppeteer();

const config = `# one node of two A100s, two teams (the console's queue tree test)
log_dir: logs
kill_grace_s: 2
pools:
  - {name: a100, policy: fifo}
nodes:
  - {name: node0, pool: a100, cpu_milli: 64000, memory: 256GiB, gpus: [{kind: a100-80gb, count: 2}]}
queues:
  - name: org
    guaranteed: {gpu_milli: 2000, gpu_memory: 160GiB}
    children:
      - {name: ml, guaranteed: {gpu_milli: 1000, gpu_memory: 80GiB}}
      - {name: vision, guaranteed: {gpu_milli: 1000, gpu_memory: 80GiB}, weight: 2}
${usersYaml()}`;

// The table's rows: queue name -> {cell header: text}.
const rows = (page) => page.$$eval('#queues-table tbody tr', (trs) => {
  const heads = [...document.querySelectorAll('#queues-table thead th')].map((t) => t.textContent);
  const out = {};
  for (const tr of trs) {
    const cells = [...tr.children].map((c) => c.textContent.trim());
    const row = {};
    heads.forEach((h, i) => { row[h] = cells[i]; });
    row.label = tr.firstElementChild.getAttribute('aria-label');
    out[tr.dataset.queue] = row;
  }
  return out;
});

await run('teams', async ({onExit}) => {
  const {serve, url} = await startServe(args, config, onExit);
  const {page} = await openPage(args, puppeteer, onExit);
  await login(page, url, 'alice');

  step('the tree, idle: guarantees, nothing used');
  await page.waitForSelector('#queues-table tbody tr');
  let r = await rows(page);
  assert(Object.keys(r).join() === 'org,ml,vision', `queues in tree order: ${Object.keys(r)}`);
  assert(r.ml.Guaranteed === '1000 milli, 80 GiB', `ml's guarantee: ${r.ml.Guaranteed}`);
  assert(r.vision.Weight === '2', `vision's weight: ${r.vision.Weight}`);
  assert(r.org.Limit === 'none', `no limit: ${r.org.Limit}`);
  assert(/^0 milli/.test(r.ml.Used), `nothing used: ${r.ml.Used}`);

  step('alice borrows vision\'s idle GPU');
  const borrower = await serve.submit('alice', ['--name', 'borrower', '--gpus', '2',
    '--preemptible', '--', 'sleep', '120']);
  await page.waitForFunction(() => /^2000 milli/.test(
    document.querySelector('#queues-table tr[data-queue="ml"] td:nth-child(5)')?.textContent ?? ''));
  r = await rows(page);
  assert(!/^0 milli/.test(r.ml.Borrowed), `ml borrows: ${JSON.stringify(r.ml)}`);
  assert(/^1000 milli/.test(r.vision.Lent), `vision lends its GPU: ${JSON.stringify(r.vision)}`);
  assert(r.ml.Running === '1', `ml runs one job: ${r.ml.Running}`);
  assert(/uses 2000 of its guaranteed 1000 milli/.test(r.ml.label), `row label: ${r.ml.label}`);
  const widths = await page.$eval('#queues-table tr[data-queue="ml"] .qbar', (b) =>
    [...b.children].map((s) => s.style.width));
  assert(parseFloat(widths[1]) > 0, `the bar has a borrowed part: ${widths}`);
  await screenshot(page, args, 'team-queues');

  step('bob needs vision\'s guarantee: alice\'s job is reclaimed whole');
  const owner = await serve.submit('bob', ['--name', 'owner', '--gpus', '1', '--', 'sleep', '120']);
  await page.waitForFunction(() => /^1000 milli/.test(
    document.querySelector('#queues-table tr[data-queue="vision"] td:nth-child(5)')?.textContent ?? ''),
  {timeout: 30000});
  r = await rows(page);
  assert(/^0 milli/.test(r.vision.Lent), `vision lends nothing now: ${JSON.stringify(r.vision)}`);
  const victim = (await serve.api('alice', 'GET', `/v1/jobs/${borrower.id}`)).body;
  assert(victim.state === 'preempted', `the borrower was reclaimed: ${victim.state}`);
  const started = (await serve.api('bob', 'GET', `/v1/jobs/${owner.id}`)).body;
  assert(['running', 'starting'].includes(started.state), `bob's job runs: ${started.state}`);

  const headers = await page.$$eval('th', (ths) => ths.filter((t) => !t.getAttribute('scope')).length);
  assert(headers === 0, 'every <th> has a scope');
  assert(page.problems.length === 0, `no console errors: ${page.problems}`);
}, args);
