// Replicas on the console's cluster page (docs/operations.md, "High
// availability"): two `tessera serve` replicas over a real PostgreSQL. The
// follower's page says which replica leads, since when, and that it
// follows (with how old its view is); a drain there, which the follower
// sends to the leader (307, another origin), is not followed and says so;
// the leader's page says it leads. The leader dies: the follower's page
// says that it leads now, without a reload.
//   node replica_test.mjs --tessera BIN [--workdir DIR]
import {parseArgs, loadPuppeteer, startServe, openPage, newPage, login, usersYaml,
  assert, run, step, screenshot} from './lib.mjs';
import {startPostgres, freePort} from './postgres.mjs';

const args = parseArgs();
const puppeteer = await loadPuppeteer();

// The replica line's text.
const line = (page) => page.$eval('#cluster-replica', (p) => p.textContent);

await run('replica', async ({onExit}) => {
  step('PostgreSQL, then replica r1 (it leads) and r2 (it follows)');
  const pg = await startPostgres(onExit);
  pg.createDatabase('ha');
  const config = `# two replicas over one PostgreSQL (the console's replica test)
store:
  postgres: {url: '${pg.url('ha')}', password_file: '${pg.passwordFile}'}
ha: {lease_s: 2, lease_renew_s: 0.5}
log_dir: logs
pools:
  - {name: a100, policy: fifo}
nodes:
  - {name: node0, pool: a100, cpu_milli: 64000, memory: 256GiB, gpus: [{kind: a100-80gb, count: 2}]}
${usersYaml()}`;
  const replica = async (name) => {
    const port = await freePort();
    const {serve, url} = await startServe(args, config, onExit,
      {name, port, flags: ['--replica', name], cancelAll: false, timeoutMs: 60000});
    return {serve, url};
  };
  // Waits until `serve`'s /healthz says `role`, with `leader` leading.
  const waitRole = async (serve, role, leader) => {
    const deadline = Date.now() + 60000;
    while (Date.now() < deadline) {
      const h = await serve.api('root', 'GET', '/healthz').catch(() => null);
      if (h && h.body.role === role && h.body.leader?.name === leader) return h.body;
      await new Promise((res) => setTimeout(res, 100));
    }
    throw new Error(`${serve.log}: not ${role} with ${leader} leading`);
  };
  const r1 = await replica('r1');
  await waitRole(r1.serve, 'leader', 'r1');
  const r2 = await replica('r2');
  const health = await waitRole(r2.serve, 'follower', 'r1');

  step('the follower\'s page: who leads, since when; marked a follower');
  const {browser, page} = await openPage(args, puppeteer, onExit);
  await login(page, r2.url, 'root');
  await page.waitForSelector('button.gpu');
  await page.waitForFunction(() => !document.getElementById('cluster-replica').hidden);
  const text = await line(page);
  const leaderLine = new RegExp(`^Leader: replica r1 \\(${r1.url.replace(/\./g, '\\.')}\\) ` +
    'since \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d\\. ');
  assert(leaderLine.test(text), `who leads and since when: ${text}`);
  assert(/Follower This page comes from replica r2, a follower: its view of the jobs is \d+\.\d s old\./
    .test(text), `marked a follower, with its view's age: ${text}`);
  assert(/Drain and undrain nodes on the leader's console\./.test(text),
    `an admin is told where drains work: ${text}`);
  const since = await page.$eval('#cluster-replica time', (t) => t.getAttribute('datetime'));
  assert(since === new Date(health.leader.since * 1000).toISOString(),
    `the <time> is the lease's start (${since}, ${health.leader.since})`);
  const link = await page.$eval('#cluster-replica a', (a) => a.getAttribute('href'));
  assert(link === `${r1.url}/`, `the leader's address links to its console (${link})`);
  assert(await page.$('#cluster-replica .badge.follower'), 'a Follower badge');
  await screenshot(page, args, 'replica-follower');

  step('a drain on the follower is the leader\'s: not followed, and said');
  page.once('dialog', (d) => d.accept());
  await page.click('button.drain[data-node="node0"]');
  await page.waitForFunction(() => /Could not drain node0: this replica follows/
    .test(document.getElementById('cluster-status').textContent));
  assert(await page.$eval('#banner', (b) => b.hidden), 'no "unreachable" banner: the service answered');
  const cluster = await r1.serve.api('root', 'GET', '/v1/cluster');
  assert(cluster.body.gpus.every((g) => !g.drained), 'nothing was drained');

  step('the leader\'s page says it leads, with no Follower badge');
  const leaderPage = await newPage(browser);
  await login(leaderPage, r1.url, 'alice');
  await leaderPage.waitForFunction(() => !document.getElementById('cluster-replica').hidden);
  const own = await line(leaderPage);
  assert(leaderLine.test(own) && / This page comes from replica r1, the leader\.$/.test(own),
    `the leader's line: ${own}`);
  assert(!(await leaderPage.$('#cluster-replica .badge')), 'no badge on the leader');
  await leaderPage.close();

  step('the leader dies: the follower takes over, and its page says so');
  await r1.serve.stop('SIGKILL');
  await page.bringToFront();
  await page.waitForFunction(() => /^Leader: replica r2 .* This page comes from replica r2, the leader\.$/
    .test(document.getElementById('cluster-replica').textContent), {timeout: 30000});
  assert(!(await page.$('#cluster-replica .badge.follower')), 'no longer a follower');
  await screenshot(page, args, 'replica-leader');
  const problems = page.problems;
  assert(problems.length === 0, `no console errors: ${problems.join('; ')}`);
}, args);
