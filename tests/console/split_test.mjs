// A split job on the console's job page: two A100s each hold a 500-milli
// job using all but 700 MiB of their memory, so GPT-2 (inference, ~1 GiB)
// fits no GPU alone and the service splits it over both slivers. The job
// page shows the decision, the plan's devices, the timeline (zoomable) and
// the graph coloured by device.
//   node split_test.mjs --tessera BIN [--workdir DIR]
import path from 'node:path';
import {parseArgs, loadPuppeteer, startServe, openPage, login, usersYaml,
  SOURCE_DIR, assert, run, step, screenshot} from './lib.mjs';

const args = parseArgs();
const puppeteer = await loadPuppeteer();

const config = `# one node of two A100s (the console's split test)
log_dir: logs
# no GPU here: nothing isolates the fractions, and the test shares anyway
share_unisolated: true
pools:
  - {name: a100, policy: fifo}
nodes:
  - {name: node0, pool: a100, cpu_milli: 64000, memory: 256GiB, gpus: [{kind: a100-80gb, count: 2}]}
${usersYaml()}`;

await run('split', async ({onExit}) => {
  const {serve, url} = await startServe(args, config, onExit);

  step('fill both GPUs but 700 MiB, then submit GPT-2');
  for (let i = 0; i < 2; ++i) {
    await serve.submit('bob', ['--name', `filler-${i}`, '--gpu-milli', '500',
      '--gpu-memory', `${80 * 1024 - 700}MiB`, '--', 'sleep', '120']);
  }
  const job = await serve.submit('alice', ['--name', 'gpt2-split',
    '--model', path.join(SOURCE_DIR, 'models/zoo/gpt2.onnx'), '--', 'sleep', '120']);
  let after = null;
  for (let i = 0; i < 100; ++i) {
    after = (await serve.api('alice', 'GET', `/v1/jobs/${job.id}`)).body;
    if (after.state === 'running' || after.state === 'starting') break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert(after.plan && after.allocation.length === 2, `the job started split: ${after.state} ${after.reason}`);

  const {page} = await openPage(args, puppeteer, onExit);
  await login(page, url, 'alice');

  step('the job page: decision, devices, timeline and graph');
  await page.goto(`${url}/#/jobs/${job.id}`);
  await page.waitForSelector('#job-decision .decision-summary');
  const summary = await page.$eval('#job-decision .decision-summary', (p) => p.textContent);
  assert(/-> split/.test(summary), `the decision's summary: ${summary}`);
  const devices = await page.$$eval('table.plan-devices tbody tr th', (ths) => ths.map((t) => t.textContent));
  assert(devices.join() === 'node0/gpu0,node0/gpu1', `the plan's devices: ${devices}`);
  const sizedBy = await page.$$eval('#job-summary dt', (dts) =>
    dts.find((d) => d.textContent === 'Sized by')?.nextElementSibling?.textContent);
  assert(sizedBy === 'estimate', `the job says what sized it: ${sizedBy}`);
  await page.waitForSelector('#plan-timeline .tl-scroll svg');
  await page.waitForSelector('#plan-graph .graph-scroll svg');
  await screenshot(page, args, 'split-job');
  const timeline = await page.$eval('#plan-timeline', (f) => {
    const s = f.querySelector('.tl-scroll svg');
    return {
      width: Number(s.getAttribute('width')),
      titles: s.querySelectorAll('title').length,
      scripts: f.querySelectorAll('script, foreignObject').length,
      handlers: [...f.querySelectorAll('*')].filter((e) =>
        [...e.attributes].some((a) => a.name.startsWith('on'))).length,
      labels: f.querySelector('.tl-labels') ? f.querySelector('.tl-labels').textContent : '',
    };
  });
  assert(timeline.titles > 10, `the timeline keeps its <title> tooltips (${timeline.titles})`);
  assert(timeline.scripts === 0 && timeline.handlers === 0, 'no script in the imported pictures');
  assert(/node0\/gpu0/.test(timeline.labels) && /node0\/gpu1/.test(timeline.labels),
    `a lane per device: ${timeline.labels}`);
  await page.click('#plan-timeline button[aria-label="Zoom in"]');
  const zoomed = await page.$eval('#plan-timeline .tl-scroll svg', (s) => Number(s.getAttribute('width')));
  assert(zoomed > timeline.width * 1.9, `zoom in widens the timeline (${timeline.width} -> ${zoomed})`);
  assert(/zoom 2x/.test(await page.$eval('#plan-timeline .zoom-level', (z) => z.textContent)),
    'the zoom level is shown');
  const box = await page.$eval('#plan-timeline .tl-scroll', (d) => {
    d.scrollIntoView();
    const r = d.getBoundingClientRect();
    return {x: r.x + r.width / 2, y: r.y + Math.min(r.height / 2, 20)};
  });
  await page.mouse.move(box.x, box.y);
  await page.keyboard.down('Control');
  await page.mouse.wheel({deltaY: 100});
  await page.keyboard.up('Control');
  await page.waitForFunction((w) => Number(document.querySelector('#plan-timeline .tl-scroll svg')
    .getAttribute('width')) < w, {}, zoomed);
  await page.focus('#plan-timeline .tl-scroll');
  await page.keyboard.press('0');
  await page.waitForFunction((w) => Number(document.querySelector('#plan-timeline .tl-scroll svg')
    .getAttribute('width')) === w, {}, timeline.width);
  const graph = await page.$eval('#plan-graph .graph-scroll svg', (s) => {
    const fills = new Set([...s.querySelectorAll('[fill]')].map((e) => e.getAttribute('fill')));
    return {titles: s.querySelectorAll('title').length, fills: fills.size};
  });
  assert(graph.titles > 10 && graph.fills >= 2, `the graph is coloured by device (${JSON.stringify(graph)})`);
  await page.$eval('#plan-h', (h) => h.scrollIntoView());
  await screenshot(page, args, 'split-plan');

  step('the queue marks it a split model job');
  await page.click('a[href="#/queue"]');
  await page.waitForSelector(`tr[data-job="${job.id}"]`);
  const row = await page.$eval(`tr[data-job="${job.id}"]`, (r) => r.textContent);
  assert(/split model/.test(row), `the queue row says split: ${row}`);
  assert(page.problems.length === 0, `no console errors: ${page.problems.join('; ')}`);
}, args);
