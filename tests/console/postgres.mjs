// A real PostgreSQL server for the console's replica test, as
// tests/testlib/postgres_server.h starts one for the C++ tests: Debian's
// postgresql package's initdb into a temporary directory, the server on a
// free port of 127.0.0.1, password authentication for user "tessera"; as
// root (CI) the server runs as user "nobody". A missing package fails the
// test (scripts/setup.sh installs it), never skips it.
import {execFileSync} from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import {fail} from './lib.mjs';

const USER = 'tessera';
const PASSWORD = 'pg-console-secret';

// A loopback TCP port that was free a moment ago.
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const {port} = server.address();
      server.close(() => resolve(port));
    });
  });
}

// The newest installed version's binaries.
function binDir() {
  const root = '/usr/lib/postgresql';
  const versions = fs.existsSync(root) ? fs.readdirSync(root)
    .filter((v) => fs.existsSync(path.join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(a) - Number(b)) : [];
  if (!versions.length) {
    fail('no PostgreSQL server binaries under /usr/lib/postgresql/*/bin ' +
      '(Debian\'s postgresql package; scripts/setup.sh installs it)');
  }
  return path.join(root, versions[versions.length - 1], 'bin');
}

// Started; stopped and removed when the test ends (onExit).
export async function startPostgres(onExit) {
  const bin = binDir();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-console-pg-'));
  fs.chmodSync(dir, 0o755);
  const passwordFile = path.join(dir, 'password');
  fs.writeFileSync(passwordFile, `${PASSWORD}\n`);
  const root = process.getuid && process.getuid() === 0;
  if (root) execFileSync('chown', ['-R', 'nobody:nogroup', dir]);
  // `cmd` as the server's user, its output in dir/run.log.
  const run = (cmd, cmdArgs) => {
    const [file, argv] = root ? ['runuser', ['-u', 'nobody', '--', cmd, ...cmdArgs]] : [cmd, cmdArgs];
    try {
      execFileSync(file, argv, {stdio: ['ignore', 'pipe', 'pipe'], timeout: 60000});
    } catch (e) {
      const log = path.join(dir, 'server.log');
      throw new Error(`${path.basename(cmd)} failed: ${e.stderr || e.message}` +
        (fs.existsSync(log) ? `\n${fs.readFileSync(log, 'utf8')}` : ''));
    }
  };
  const port = await freePort();
  const data = path.join(dir, 'data');
  run(path.join(bin, 'initdb'), ['-D', data, '-U', USER, `--pwfile=${passwordFile}`,
    '--auth=scram-sha-256', '-E', 'UTF8', '--no-locale', '--no-sync']);
  const ctl = path.join(bin, 'pg_ctl');
  run(ctl, ['-D', data, '-l', path.join(dir, 'server.log'), '-w', '-t', '30',
    '-o', `-p ${port} -h 127.0.0.1 -k ${dir}`, 'start']);
  onExit(() => {
    run(ctl, ['-D', data, '-m', 'fast', 'stop']);
    fs.rmSync(dir, {recursive: true, force: true});
  });
  return {
    passwordFile,
    // postgresql://tessera@127.0.0.1:PORT/DB, without the password.
    url: (db = 'postgres') => `postgresql://${USER}@127.0.0.1:${port}/${db}`,
    createDatabase(db) {
      run('env', [`PGPASSWORD=${PASSWORD}`, path.join(bin, 'psql'), '-q', '-v', 'ON_ERROR_STOP=1', '-h', '127.0.0.1',
        '-p', String(port), '-U', USER, '-d', 'postgres', '-c', `CREATE DATABASE ${db}`]);
    },
  };
}
