// Shared by the console's browser tests: a `tessera serve` of the test's
// own (port found by the service, config in a temporary directory), the
// CLI, a headless Chromium through puppeteer-core, and small assertions.
// (postgres.mjs: a PostgreSQL server for replicas of the service.)
// A missing Chromium or puppeteer-core fails the test, never skips it.
import {spawn, execFile} from 'node:child_process';
import {createHash} from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {fileURLToPath} from 'node:url';

export const SOURCE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export function fail(message) {
  console.error(`FAIL: ${message}`);
  process.exit(1);
}

export function assert(cond, message) {
  if (!cond) throw new Error(`assertion failed: ${message}`);
}

// --tessera BIN [--chromium PATH] [--workdir DIR]
export function parseArgs() {
  const args = {tessera: null, chromium: process.env.CHROMIUM || '/usr/bin/chromium', workdir: null};
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; ++i) {
    const key = argv[i].replace(/^--/, '');
    if (!(key in args) || i + 1 >= argv.length) fail(`unknown or incomplete argument ${argv[i]}`);
    args[key] = argv[++i];
  }
  if (!args.tessera || !fs.existsSync(args.tessera)) fail(`--tessera BIN: ${args.tessera} does not exist`);
  args.tessera = path.resolve(args.tessera);
  if (!fs.existsSync(args.chromium)) {
    fail(`Chromium not found at ${args.chromium}: install it (scripts/setup.sh adds the ` +
      `Debian package chromium) or set CHROMIUM=/path/to/chromium`);
  }
  args.base = args.workdir || os.tmpdir();
  fs.mkdirSync(args.base, {recursive: true});
  // The service's database and job logs: removed when the test passes.
  args.dir = fs.mkdtempSync(path.join(args.base, 'console-'));
  return args;
}

export async function loadPuppeteer() {
  try {
    return (await import('puppeteer-core')).default;
  } catch (e) {
    fail(`puppeteer-core is not installed in tests/console/node_modules: run ` +
      `scripts/fetch_console.sh (${e.message})`);
  }
  return null;
}

export function sha256(text) {
  return createHash('sha256').update(text).digest('hex');
}

export const TOKENS = {alice: 'alice-test-token', bob: 'bob-test-token', root: 'root-test-token'};

export function usersYaml() {
  return `users:
  - {name: alice, role: user, team: ml, token_sha256: ${sha256(TOKENS.alice)}}
  - {name: bob, role: user, team: vision, token_sha256: ${sha256(TOKENS.bob)}}
  - {name: root, role: admin, token_sha256: ${sha256(TOKENS.root)}}
`;
}

// `tessera serve` in dir with config (YAML text); start() resolves once it
// printed its address. stop() ends it (SIGTERM); kill() like a crash.
// Options: `name` of its config and log files, a fixed `port` (0: any),
// `flags` instead of its SQLite --db (a replica's: ['--replica', 'r1']).
export class Serve {
  constructor(tessera, dir, configText, {name = 'serve', port = 0, flags = null} = {}) {
    this.tessera = tessera;
    this.dir = dir;
    this.config = path.join(dir, `${name}.yaml`);
    fs.writeFileSync(this.config, configText);
    this.log = path.join(dir, `${name}.log`);
    this.port = port;
    this.flags = flags ?? ['--db', path.join(dir, 'tessera.db')];
    this.proc = null;
  }

  async start(timeoutMs = 15000) {
    const out = fs.openSync(this.log, 'a');
    this.proc = spawn(this.tessera, ['serve', '--config', this.config,
      ...this.flags, '--listen', `127.0.0.1:${this.port}`],
    {cwd: this.dir, stdio: ['ignore', out, 'pipe']});
    const proc = this.proc;
    let text = '';
    const url = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`tessera serve did not start: ${text}`)), timeoutMs);
      proc.stderr.on('data', (chunk) => {
        text += chunk;
        fs.appendFileSync(this.log, chunk);
        const m = /serving on (https?:\/\/[^ ]+:(\d+))/.exec(text);
        if (m) {
          clearTimeout(timer);
          this.port = Number(m[2]);
          resolve(m[1]);
        }
      });
      proc.on('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`tessera serve exited (${code}): ${text}`));
      });
    });
    proc.removeAllListeners('exit');
    this.url = url;
    return url;
  }

  async stop(signal = 'SIGTERM') {
    const proc = this.proc;
    if (!proc || proc.exitCode !== null) return;
    this.proc = null;
    await new Promise((resolve) => {
      proc.once('exit', resolve);
      proc.kill(signal);
    });
  }

  // An API call as `user` (a key of TOKENS): {status, body}.
  async api(user, method, route, body) {
    const res = await fetch(this.url + route, {method,
      headers: {Authorization: `Bearer ${TOKENS[user]}`,
        ...(body ? {'Content-Type': 'application/json'} : {})},
      body: body ? JSON.stringify(body) : undefined});
    const text = await res.text();
    let json = null;
    try {
      json = JSON.parse(text);
    } catch (e) {
      json = text;
    }
    return {status: res.status, body: json};
  }

  // Cancels every job that has not ended and waits until they have, so no
  // process outlives the test.
  async cancelAll() {
    const {body} = await this.api('root', 'GET', '/v1/jobs?limit=100000');
    const live = body.jobs.filter((j) => ['queued', 'starting', 'running'].includes(j.state));
    for (const j of live) await this.api('root', 'POST', `/v1/jobs/${j.id}/cancel`);
    const deadline = Date.now() + 20000;
    while (Date.now() < deadline) {
      const r = await this.api('root', 'GET', '/v1/jobs?limit=100000');
      if (!r.body.jobs.some((j) => ['queued', 'starting', 'running'].includes(j.state))) return;
      await new Promise((res) => setTimeout(res, 200));
    }
  }

  // `tessera ARGS...` as `user` against this service: stdout (throws on a
  // non-zero exit).
  cli(user, args) {
    return new Promise((resolve, reject) => {
      execFile(this.tessera, args, {cwd: this.dir, env: {...process.env,
        TESSERA_URL: this.url, TESSERA_TOKEN: TOKENS[user]}, timeout: 60000},
      (err, stdout, stderr) => {
        if (err) reject(new Error(`tessera ${args.join(' ')}: ${err.message}\n${stderr}`));
        else resolve(stdout);
      });
    });
  }

  async submit(user, args) {
    return JSON.parse(await this.cli(user, ['submit', '--json', ...args]));
  }
}

// A `tessera serve` of `configText` in args.dir, started; stopped (its
// jobs cancelled first, unless `cancelAll` is false) when the test ends.
export async function startServe(args, configText, onExit,
  {timeoutMs = 15000, cancelAll = true, ...options} = {}) {
  const serve = new Serve(args.tessera, args.dir, configText, options);
  const url = await serve.start(timeoutMs);
  onExit(() => serve.stop());
  if (cancelAll) onExit(() => serve.cancelAll());
  return {serve, url};
}

// A headless Chromium with one page (newPage), closed when the test ends.
export async function openPage(args, puppeteer, onExit) {
  const browser = await launchBrowser(puppeteer, args.chromium);
  onExit(() => browser.close());
  return {browser, page: await newPage(browser)};
}

// A headless Chromium and one page that records console errors, page
// errors and CSP violations.
export async function launchBrowser(puppeteer, chromium) {
  const args = ['--headless=new', '--disable-gpu', '--no-first-run',
    '--disable-dev-shm-usage', '--window-size=1280,800'];
  if (process.getuid && process.getuid() === 0) args.push('--no-sandbox');
  try {
    return await puppeteer.launch({executablePath: chromium, args, headless: true,
      defaultViewport: {width: 1280, height: 800}});
  } catch (e) {
    fail(`could not start Chromium (${chromium}): ${e.message}`);
  }
  return null;
}

const pages = [];

export async function newPage(browser) {
  const page = await browser.newPage();
  pages.push(page);
  page.problems = [];
  page.on('console', (msg) => {
    // The browser's own note of a failed request (the 401 of a wrong
    // token, the refused connections while the service is down) is the
    // scenario, not a fault of the page.
    if (msg.type() === 'error' && !msg.text().startsWith('Failed to load resource')) {
      page.problems.push(`console error: ${msg.text()}`);
    }
  });
  page.on('pageerror', (err) => page.problems.push(`page error: ${err.message}`));
  await page.evaluateOnNewDocument(() => {
    document.addEventListener('securitypolicyviolation', (e) => {
      console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`);
    });
  });
  page.setDefaultTimeout(15000);
  return page;
}

export function screenshotDir(args) {
  const dir = process.env.TESSERA_SCREENSHOT_DIR || path.join(args.base, 'screenshots');
  fs.mkdirSync(dir, {recursive: true});
  return dir;
}

export async function screenshot(page, args, name) {
  const file = path.join(screenshotDir(args), `${name}.png`);
  await page.screenshot({path: file});
  console.log(`screenshot: ${file}`);
}

// Logs in through the form as `user`.
export async function login(page, url, user) {
  await page.goto(`${url}/`, {waitUntil: 'domcontentloaded'});
  await page.waitForSelector('#token');
  await page.type('#token', TOKENS[user]);
  await page.click('#login button[type="submit"]');
  await page.waitForFunction((u) => document.getElementById('who-user')?.textContent === u,
    {}, user);
}

// Runs the test's body; on a failure prints it with each page's state and
// exits 1 (keeping args.dir, the service's files, to look at); on success
// removes args.dir and exits 0.
export async function run(name, body, args) {
  const started = Date.now();
  const cleanups = [];
  let failed = null;
  try {
    await body({onExit: (fn) => cleanups.unshift(fn)});
  } catch (e) {
    failed = e;
    for (const page of pages) {
      try {
        console.error(`page ${page.url()}: problems: ${page.problems.join('; ') || 'none'}`);
        console.error(await page.$eval('body', (b) => b.innerText.slice(0, 2000)));
      } catch (e2) {
        console.error(`page: ${e2.message}`);
      }
    }
  }
  for (const fn of cleanups) {
    try {
      await fn();
    } catch (e) {
      console.error(`cleanup: ${e.message}`);
    }
  }
  if (failed) {
    console.error(`FAIL ${name}: ${failed.stack || failed}`);
    process.exit(1);
  }
  if (args) fs.rmSync(args.dir, {recursive: true, force: true});
  console.log(`PASS ${name} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
  process.exit(0);
}

export function step(text) {
  console.log(`-- ${text}`);
}
