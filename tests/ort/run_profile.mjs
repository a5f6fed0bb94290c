// Runs an ONNX model through ONNX Runtime's CPU provider with profiling on
// and writes the Chrome-trace profile (OUT.json) or its per-node means as a
// `name,ms` CSV (OUT.csv), both of which `tessera profile --calibration`
// reads. One intra-op thread keeps per-operator timings stable.
//
//   node tests/ort/run_profile.mjs MODEL OUT.json|OUT.csv [NAME=DxD...]
//        [--iterations N] [--warmup N] [--optimization disabled|basic|all]
//
// Inputs get random values of their declared element type. Prints the median
// latency of the timed iterations. Install the runtime with
// scripts/fetch_ort.sh first.
import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import ort from 'onnxruntime-node';

// Enough runs that the per-node average is stable on a noisy shared machine.
const kDefaultIterations = 20;
// The first runs pay for allocation and cache warm-up; not profiled apart,
// but kept out of the reported latency.
const kDefaultWarmup = 2;

function usage(message) {
  console.error(`run_profile: ${message}\n` +
      'usage: node run_profile.mjs MODEL OUT.json [NAME=DxD...] ' +
      '[--iterations N] [--warmup N] [--optimization disabled|basic|all]');
  process.exit(2);
}

function parseArgs(argv) {
  const args = {shapes: {}, iterations: kDefaultIterations,
                warmup: kDefaultWarmup, optimization: 'basic'};
  const positional = [];
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    if (a === '--iterations' || a === '--warmup' || a === '--optimization') {
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      const v = argv[++i];
      if (a === '--optimization') {
        args.optimization = v;
      } else {
        const n = Number.parseInt(v, 10);
        if (!(n >= 0)) usage(`${a} ${v}: expected a non-negative integer`);
        args[a.slice(2)] = n;
      }
    } else if (a.includes('=')) {
      const [name, dims] = a.split('=');
      const shape = dims.split('x').map((d) => Number.parseInt(d, 10));
      if (shape.some((d) => !(d > 0))) usage(`${a}: expected NAME=DxDx...`);
      args.shapes[name] = shape;
    } else {
      positional.push(a);
    }
  }
  if (positional.length !== 2) usage('expected MODEL and OUT.json');
  [args.model, args.out] = positional;
  if (args.iterations < 1) usage('--iterations must be at least 1');
  return args;
}

function randomTensor(type, shape) {
  const n = shape.reduce((a, b) => a * b, 1);
  switch (type) {
    case 'float32': {
      const data = new Float32Array(n);
      for (let i = 0; i < n; ++i) data[i] = Math.random() * 2 - 1;
      return new ort.Tensor('float32', data, shape);
    }
    case 'int64': {
      const data = new BigInt64Array(n);
      for (let i = 0; i < n; ++i) data[i] = BigInt(i % 2);
      return new ort.Tensor('int64', data, shape);
    }
    case 'int32': {
      const data = new Int32Array(n);
      for (let i = 0; i < n; ++i) data[i] = i % 2;
      return new ort.Tensor('int32', data, shape);
    }
    case 'bool':
      return new ort.Tensor('bool', new Uint8Array(n).fill(1), shape);
    default:
      throw new Error(`input type ${type} is not supported by this runner`);
  }
}

function inputShape(name, meta, shapes) {
  if (shapes[name]) return shapes[name];
  const dims = meta?.shape ?? [];
  if (dims.some((d) => typeof d !== 'number' || d < 0)) {
    usage(`input '${name}' has symbolic dimensions: bind it with ` +
          `${name}=DxD...`);
  }
  return dims;
}

// `name,ms` per node, mean over the profiled runs, in execution order: the
// CSV form tessera's --calibration also reads.
function toCsv(events) {
  const suffix = '_kernel_time';
  const sums = new Map();
  for (const e of events) {
    if (e.cat !== 'Node' || !e.name.endsWith(suffix)) continue;
    const name = e.name.slice(0, -suffix.length);
    const s = sums.get(name) ?? {us: 0, n: 0};
    s.us += e.dur;
    s.n += 1;
    sums.set(name, s);
  }
  let out = 'name,ms\n';
  for (const [name, s] of sums) out += `${name},${(s.us / s.n / 1e3).toFixed(4)}\n`;
  return out;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-ort-'));
  const session = await ort.InferenceSession.create(args.model, {
    executionProviders: ['cpu'],
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: args.optimization,
    enableProfiling: true,
    profileFilePrefix: path.join(dir, 'profile'),
  });
  const feeds = {};
  session.inputNames.forEach((name, i) => {
    const meta = session.inputMetadata?.[i];
    const type = meta?.type ?? 'float32';
    feeds[name] = randomTensor(type, inputShape(name, meta, args.shapes));
  });
  const times = [];
  for (let i = 0; i < args.warmup + args.iterations; ++i) {
    const start = process.hrtime.bigint();
    await session.run(feeds);
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    if (i >= args.warmup) times.push(ms);
  }
  session.endProfiling();
  await session.release();
  // ORT names the file PREFIX_<date>.json: find it in our private directory.
  const written = fs.readdirSync(dir).filter((f) => f.endsWith('.json'));
  if (written.length !== 1) {
    throw new Error(`expected one profile in ${dir}, found ${written.length}`);
  }
  const profile = path.join(dir, written[0]);
  if (args.out.endsWith('.csv')) {
    fs.writeFileSync(args.out, toCsv(JSON.parse(fs.readFileSync(profile))));
  } else {
    fs.copyFileSync(profile, args.out);
  }
  fs.rmSync(dir, {recursive: true, force: true});
  times.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)];
  console.log(`${path.basename(args.model)}: median ${median.toFixed(3)} ms ` +
              `over ${times.length} runs (1 thread); profile: ${args.out}`);
}

main().catch((e) => {
  console.error(`run_profile: ${e.message}`);
  process.exit(1);
});
