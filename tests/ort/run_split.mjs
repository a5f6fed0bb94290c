// Checks tessera splits with ONNX Runtime's CPU provider: runs each original
// model once, then its parts one session at a time in the manifest's `order`,
// passing tensors between them by name, and compares every original output
// of the chain against the original run (and against expected outputs when a
// test data set is given). One intra-op thread unless told otherwise.
//
//   node tests/ort/run_split.mjs CASES.json RESULTS.json
//        [--optimization disabled|basic|all] [--threads N] [--tolerance X]
//
// CASES.json: {"cases": [{"name", "model", "manifest", "data"?, "shapes"?,
// "seed"?}]}; relative paths are taken from the working directory, part
// files from the manifest's directory. `data` is a directory of input_N.pb
// (and output_N.pb) TensorProtos; without it inputs are seeded random values
// of each input's declared type and shape (`shapes` binds {"name": [dims]}).
// RESULTS.json: {"runtime", "optimization", "threads", "tolerance",
// "results": [{"name", "ok", "error", "original_error" (ONNX Runtime could
// not run the original model itself), "parts_run", "outputs": [{"name",
// "dims", "type", "rel_err", "max_abs_diff", "mismatches", "problem",
// "rel_err_expected"}], "original_ms", "chain_ms"}]}, where errors are
// normwise: max |chain - original| / max |original|, and non-finite numbers
// are written as the strings "inf", "-inf" and "nan". Exits 0 once every case
// has run, whether or not it passed. Install the runtime with
// scripts/fetch_ort.sh first.
import fs from 'node:fs';
import path from 'node:path';
import {createRequire} from 'node:module';
import ort from 'onnxruntime-node';

// Largest normwise relative error of a chained output that still passes: the
// parts run the same kernels as the whole model, so only fusions that the
// optimizer can no longer make across a cut move the result.
const kDefaultTolerance = 1e-5;
const kDefaultSeed = 1;
const kFormat = 'tessera-split/1';
const kOptimizations = ['disabled', 'basic', 'all'];

function usage(message) {
  console.error(`run_split: ${message}\n` +
      'usage: node run_split.mjs CASES.json RESULTS.json ' +
      '[--optimization disabled|basic|all] [--threads N] [--tolerance X]');
  process.exit(2);
}

function parseArgs(argv) {
  const args = {optimization: 'basic', threads: 1,
                tolerance: kDefaultTolerance};
  const positional = [];
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    if (a === '--optimization' || a === '--threads' || a === '--tolerance') {
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      const v = argv[++i];
      if (a === '--optimization') {
        if (!kOptimizations.includes(v)) usage(`--optimization ${v}: unknown`);
        args.optimization = v;
      } else if (a === '--threads') {
        if (!/^[0-9]+$/.test(v) || Number(v) < 1) {
          usage(`--threads ${v}: expected a positive integer`);
        }
        args.threads = Number(v);
      } else {
        const x = Number(v);
        if (v.trim() === '' || !(x >= 0)) {
          usage(`--tolerance ${v}: expected a non-negative number`);
        }
        args.tolerance = x;
      }
    } else if (a.startsWith('--')) {
      usage(`unknown option ${a}`);
    } else {
      positional.push(a);
    }
  }
  if (positional.length !== 2) usage('expected CASES.json and RESULTS.json');
  [args.cases, args.results] = positional;
  return args;
}

// ---- Protocol buffers: just enough of the wire format for TensorProto and
// for finding a model's initializer names.

class ProtoReader {
  constructor(bytes, start = 0, end = bytes.length) {
    this.buf = bytes;
    this.pos = start;
    this.end = end;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  done() {
    return this.pos >= this.end;
  }

  need(n) {
    if (this.pos + n > this.end) throw new Error('truncated protobuf');
  }

  // A Number while it fits in 49 bits, else a BigInt of all 64.
  varint() {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 7; ++i) {
      this.need(1);
      const b = this.buf[this.pos++];
      value += (b & 0x7f) * scale;
      if (b < 0x80) return value;
      scale *= 128;
    }
    let big = BigInt(value);
    for (let shift = 49n; shift < 70n; shift += 7n) {
      this.need(1);
      const b = this.buf[this.pos++];
      big |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return BigInt.asUintN(64, big);
    }
    throw new Error('malformed varint');
  }

  length() {
    const n = this.varint();
    if (typeof n !== 'number') throw new Error('protobuf length too large');
    this.need(n);
    return n;
  }

  bytes() {
    const n = this.length();
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  float32() {
    this.need(4);
    const v = this.view.getFloat32(this.pos, true);
    this.pos += 4;
    return v;
  }

  float64() {
    this.need(8);
    const v = this.view.getFloat64(this.pos, true);
    this.pos += 8;
    return v;
  }

  tag() {
    const t = this.varint();
    if (typeof t !== 'number') throw new Error('protobuf tag too large');
    return [Math.floor(t / 8), t % 8];
  }

  skip(wire) {
    const sizes = {1: 8, 5: 4};
    if (wire === 0) {
      this.varint();
    } else if (wire === 2) {
      const n = this.length();  // (not `pos += length()`: pos moves)
      this.pos += n;
    } else if (sizes[wire]) {
      this.need(sizes[wire]);
      this.pos += sizes[wire];
    } else {
      throw new Error(`unsupported protobuf wire type ${wire}`);
    }
  }

  // Appends one element of a repeated scalar field, or all of a packed one.
  repeated(wire, scalarWire, readOne, out) {
    if (wire === 2 && scalarWire !== 2) {
      const n = this.length();
      const end = this.pos + n;
      while (this.pos < end) out.push(readOne());
      if (this.pos !== end) throw new Error('malformed packed field');
    } else if (wire === scalarWire) {
      out.push(readOne());
    } else {
      throw new Error(`unexpected protobuf wire type ${wire}`);
    }
  }
}

const kUtf8 = new TextDecoder();

// TensorProto.data_type -> ORT type and its typed array (null: plain array).
const kDataTypes = {
  1: ['float32', Float32Array], 2: ['uint8', Uint8Array],
  3: ['int8', Int8Array], 4: ['uint16', Uint16Array],
  5: ['int16', Int16Array], 6: ['int32', Int32Array],
  7: ['int64', BigInt64Array], 8: ['string', null], 9: ['bool', Uint8Array],
  10: ['float16', Uint16Array], 11: ['float64', Float64Array],
  12: ['uint32', Uint32Array], 13: ['uint64', BigUint64Array],
};

const toInt32 = (v) => typeof v === 'number' ? v | 0 :
  Number(BigInt.asIntN(32, v));
const toInt64 = (v) => BigInt.asIntN(64, BigInt(v));
const toUint64 = (v) => BigInt.asUintN(64, BigInt(v));

function parseTensorProto(bytes) {
  const t = {dims: [], dataType: 0, name: '', raw: null, location: 0,
             floats: [], int32s: [], strings: [], int64s: [], doubles: [],
             uint64s: []};
  const r = new ProtoReader(bytes);
  const varint = () => r.varint();
  while (!r.done()) {
    const [field, wire] = r.tag();
    switch (field) {
      case 1: r.repeated(wire, 0, () => Number(toInt64(r.varint())), t.dims);
        break;
      case 2: t.dataType = toInt32(r.varint()); break;
      case 4: r.repeated(wire, 5, () => r.float32(), t.floats); break;
      case 5: r.repeated(wire, 0, varint, t.int32s); break;
      case 6: r.repeated(wire, 2, () => kUtf8.decode(r.bytes()), t.strings);
        break;
      case 7: r.repeated(wire, 0, varint, t.int64s); break;
      case 8: t.name = kUtf8.decode(r.bytes()); break;
      case 9: t.raw = r.bytes(); break;
      case 10: r.repeated(wire, 1, () => r.float64(), t.doubles); break;
      case 11: r.repeated(wire, 0, varint, t.uint64s); break;
      case 14: t.location = toInt32(r.varint()); break;
      default: r.skip(wire);
    }
  }
  return t;
}

// The values of a parsed TensorProto held in its typed field, as a typed
// array (or an array of strings) of its element type.
function typedFieldValues(t, type, Ctor) {
  switch (type) {
    case 'float32': return Float32Array.from(t.floats);
    case 'float64': return Float64Array.from(t.doubles);
    case 'string': return t.strings;
    case 'int64': return BigInt64Array.from(t.int64s, toInt64);
    case 'uint64': return BigUint64Array.from(t.uint64s, toUint64);
    case 'uint32': return Uint32Array.from(t.uint64s, (v) => Number(v));
    case 'bool': return Uint8Array.from(t.int32s, (v) => v ? 1 : 0);
    default: return Ctor.from(t.int32s, toInt32);  // int8..int32, float16
  }
}

// {name, tensor} from a serialized TensorProto.
function decodeTensor(bytes) {
  const t = parseTensorProto(bytes);
  const known = kDataTypes[t.dataType];
  if (!known) {
    throw new Error(`unsupported TensorProto data_type ${t.dataType}`);
  }
  if (t.location === 1) {
    throw new Error('external tensor data is not supported');
  }
  const [type, Ctor] = known;
  let data;
  if (t.raw !== null) {
    if (!Ctor) throw new Error('string tensor with raw_data');
    if (t.raw.length % Ctor.BYTES_PER_ELEMENT !== 0) {
      throw new Error(`raw_data of ${t.raw.length} bytes is not a whole ` +
                      `number of ${type} elements`);
    }
    // A fresh buffer: raw_data need not be aligned for the typed array.
    const copy = new Uint8Array(t.raw.length);
    copy.set(t.raw);
    data = new Ctor(copy.buffer);
  } else {
    data = typedFieldValues(t, type, Ctor);
  }
  const count = t.dims.reduce((a, b) => a * b, 1);
  if (data.length !== count) {
    throw new Error(`tensor '${t.name}' has ${data.length} values for ` +
                    `dims [${t.dims}]`);
  }
  return {name: t.name, tensor: new ort.Tensor(type, data, t.dims)};
}

// Names of the initializers (dense and sparse) of an ONNX model file: the
// inputs ORT may list that need no feed.
function initializerNames(file) {
  const names = new Set();
  const tensorName = (r) => {
    let name = '';
    while (!r.done()) {
      const [field, wire] = r.tag();
      if (field === 8 && wire === 2) name = kUtf8.decode(r.bytes());
      else r.skip(wire);
    }
    return name;
  };
  const model = new ProtoReader(fs.readFileSync(file));
  while (!model.done()) {
    const [field, wire] = model.tag();
    if (field !== 7 || wire !== 2) {
      model.skip(wire);
      continue;
    }
    const graph = model.bytes();
    const g = new ProtoReader(graph);
    while (!g.done()) {
      const [f, w] = g.tag();
      if (f === 5 && w === 2) {
        const b = g.bytes();
        names.add(tensorName(new ProtoReader(b)));
      } else if (f === 15 && w === 2) {  // SparseTensorProto.values
        const s = new ProtoReader(g.bytes());
        while (!s.done()) {
          const [sf, sw] = s.tag();
          if (sf === 1 && sw === 2) names.add(tensorName(
              new ProtoReader(s.bytes())));
          else s.skip(sw);
        }
      } else {
        g.skip(w);
      }
    }
  }
  return names;
}

// ---- Inputs.

// Small seeded PRNG (mulberry32): the same case gets the same inputs.
function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const kF32 = new Float32Array(1);
const kU32 = new Uint32Array(kF32.buffer);

// IEEE half bits of a float in [-1, 1), rounding toward zero.
function toHalfBits(x) {
  kF32[0] = x;
  const bits = kU32[0];
  const sign = (bits >>> 16) & 0x8000;
  const exp = ((bits >>> 23) & 0xff) - 127 + 15;
  if (exp <= 0) return sign;  // flush tiny values to zero
  return sign | (exp << 10) | ((bits >>> 13) & 0x3ff);
}

function halfToFloat(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >>> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

function randomTensor(type, shape, rand) {
  const n = shape.reduce((a, b) => a * b, 1);
  const bit = () => rand() < 0.5 ? 0 : 1;
  const real = () => rand() * 2 - 1;
  switch (type) {
    case 'float32': return new ort.Tensor(type, Float32Array.from(
        {length: n}, real), shape);
    case 'float64': return new ort.Tensor(type, Float64Array.from(
        {length: n}, real), shape);
    case 'float16': return new ort.Tensor(type, Uint16Array.from(
        {length: n}, () => toHalfBits(real())), shape);
    case 'int64': return new ort.Tensor(type, BigInt64Array.from(
        {length: n}, () => BigInt(bit())), shape);
    case 'uint64': return new ort.Tensor(type, BigUint64Array.from(
        {length: n}, () => BigInt(bit())), shape);
    case 'int8': case 'uint8': case 'int16': case 'uint16': case 'int32':
    case 'uint32': case 'bool': {
      const Ctor = Object.values(kDataTypes).find(([t]) => t === type)[1];
      return new ort.Tensor(type, Ctor.from({length: n}, bit), shape);
    }
    default:
      throw new Error(`cannot make random ${type} inputs`);
  }
}

function randomFeeds(session, names, testCase) {
  const rand = mulberry32(testCase.seed ?? kDefaultSeed);
  const shapes = testCase.shapes ?? {};
  const feeds = {};
  for (const name of names) {
    const meta = session.inputMetadata[session.inputNames.indexOf(name)];
    if (meta && meta.isTensor === false) {
      throw new Error(`input '${name}' is not a tensor`);
    }
    const declared = meta?.shape ?? [];
    let shape = shapes[name];
    if (!shape) {
      if (declared.some((d) => typeof d !== 'number' || d < 0)) {
        throw new Error(`input '${name}' has unknown dims ` +
                        `[${declared}]: give them in "shapes"`);
      }
      shape = declared;
    }
    feeds[name] = randomTensor(meta?.type ?? 'float32', shape, rand);
  }
  return feeds;
}

// The tensors in DIR/PREFIX_N.pb, N = 0, 1, ..., in order of N.
function readTensorFiles(dir, prefix) {
  const pattern = new RegExp(`^${prefix}_([0-9]+)\\.pb$`);
  return fs.readdirSync(dir)
      .map((f) => [f, pattern.exec(f)])
      .filter(([, m]) => m)
      .sort((a, b) => Number(a[1][1]) - Number(b[1][1]))
      .map(([f]) => {
        try {
          return decodeTensor(fs.readFileSync(path.join(dir, f)));
        } catch (e) {
          throw new Error(`${path.join(dir, f)}: ${e.message}`);
        }
      });
}

// Feeds from input_N.pb: by TensorProto name where it names a feedable
// input, else by position among the feedable inputs.
function dataFeeds(dir, names) {
  const feeds = {};
  readTensorFiles(dir, 'input').forEach(({name, tensor}, i) => {
    const target = names.includes(name) ? name : names[i];
    if (target === undefined) {
      throw new Error(`${dir}: input_${i}.pb has no model input to feed`);
    }
    if (feeds[target]) throw new Error(`${dir}: input '${target}' fed twice`);
    feeds[target] = tensor;
  });
  const missing = names.filter((n) => !feeds[n]);
  if (missing.length) {
    throw new Error(`${dir}: no data for input(s) ${missing.join(', ')}`);
  }
  return feeds;
}

// ---- Comparison.

const kFloatTypes = ['float32', 'float64', 'float16'];

function numbers(tensor) {
  if (tensor.type !== 'float16') return tensor.data;
  return Float64Array.from(tensor.data, halfToFloat);
}

// Normwise comparison of ACTUAL against REFERENCE: {rel_err, max_abs_diff,
// mismatches (integer, bool and string tensors; else null), problem}.
function compare(actual, reference) {
  const out = {rel_err: Infinity, max_abs_diff: null, mismatches: null,
               problem: null};
  if (actual.type !== reference.type) {
    out.problem = `type ${actual.type}, expected ${reference.type}`;
    return out;
  }
  if (actual.dims.length !== reference.dims.length ||
      actual.dims.some((d, i) => d !== reference.dims[i])) {
    out.problem = `dims [${actual.dims}], expected [${reference.dims}]`;
    return out;
  }
  const a = numbers(actual);
  const b = numbers(reference);
  const exact = !kFloatTypes.includes(actual.type);
  if (actual.type === 'string') {
    out.mismatches = a.filter((s, i) => s !== b[i]).length;
    out.rel_err = out.mismatches ? Infinity : 0;
    return out;
  }
  let maxDiff = 0;
  let maxRef = 0;
  let nonFinite = false;
  let mismatches = 0;
  for (let i = 0; i < a.length; ++i) {
    const x = a[i];
    const y = b[i];
    if (typeof y === 'bigint') {
      if (x !== y) {
        ++mismatches;
        const d = Number(x > y ? x - y : y - x);
        if (d > maxDiff) maxDiff = d;
      }
      const m = Number(y < 0n ? -y : y);
      if (m > maxRef) maxRef = m;
      continue;
    }
    if (Number.isFinite(y) && Math.abs(y) > maxRef) maxRef = Math.abs(y);
    if (x === y || (Number.isNaN(x) && Number.isNaN(y))) continue;
    ++mismatches;
    const d = Math.abs(x - y);
    if (Number.isFinite(d)) {
      if (d > maxDiff) maxDiff = d;
    } else {
      nonFinite = true;  // NaN or infinity against something else
    }
  }
  out.max_abs_diff = nonFinite ? Infinity : maxDiff;
  out.rel_err = nonFinite ? Infinity : maxDiff / Math.max(maxRef, 1e-30);
  if (exact) out.mismatches = mismatches;
  return out;
}

// ---- Running.

function sessionOptions(args) {
  return {
    executionProviders: ['cpu'],
    graphOptimizationLevel: args.optimization,
    intraOpNumThreads: args.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    logSeverityLevel: 3,  // the console is for our one line per case
  };
}

async function timedRun(session, feeds) {
  const start = process.hrtime.bigint();
  const outputs = await session.run(feeds);
  return [outputs, Number(process.hrtime.bigint() - start) / 1e6];
}

async function withSession(file, args, body) {
  const session = await ort.InferenceSession.create(file, sessionOptions(args));
  try {
    return await body(session);
  } finally {
    await session.release();
  }
}

function sameSet(a, b) {
  const s = new Set(a);
  return a.length === b.length && s.size === new Set(b).size &&
      b.every((x) => s.has(x));
}

function readManifest(file) {
  const manifest = JSON.parse(fs.readFileSync(file, 'utf8'));
  if (manifest.format !== kFormat) {
    throw new Error(`${file}: format ${JSON.stringify(manifest.format)}, ` +
                    `expected ${kFormat}`);
  }
  for (const key of ['inputs', 'outputs', 'parts', 'order']) {
    if (!Array.isArray(manifest[key])) {
      throw new Error(`${file}: "${key}" is not an array`);
    }
  }
  const byIndex = new Map(manifest.parts.map((p) => [p.index, p]));
  if (byIndex.size !== manifest.parts.length ||
      !sameSet(manifest.order, [...byIndex.keys()])) {
    throw new Error(`${file}: "order" [${manifest.order}] is not a ` +
                    'permutation of the part indices');
  }
  return {manifest, byIndex};
}

// Runs the original model; returns its feeds and outputs.
async function runOriginal(testCase, manifest, args, result, problems) {
  return withSession(testCase.model, args, async (session) => {
    const initializers = initializerNames(testCase.model);
    const feedable = session.inputNames.filter((n) => !initializers.has(n));
    if (!sameSet(feedable, manifest.inputs)) {
      problems.push(`manifest inputs [${manifest.inputs}] are not the ` +
                    `model's inputs [${feedable}]`);
    }
    if (!sameSet(session.outputNames, manifest.outputs)) {
      problems.push(`manifest outputs [${manifest.outputs}] are not the ` +
                    `model's outputs [${session.outputNames}]`);
    }
    const feeds = testCase.data ? dataFeeds(testCase.data, feedable) :
      randomFeeds(session, feedable, testCase);
    const [outputs, ms] = await timedRun(session, feeds);
    result.original_ms = ms;
    return {feeds, outputs};
  });
}

// Checks a part's session against its manifest entry; pushes what differs.
function checkPart(session, part, file, problems) {
  const label = `part ${part.index}`;
  const declared = new Set(part.inputs);
  const extra = session.inputNames.filter((n) => !declared.has(n));
  if (extra.length) {
    const initializers = initializerNames(file);
    const unfed = extra.filter((n) => !initializers.has(n));
    if (unfed.length) {
      problems.push(`${label} reads ${unfed.join(', ')}, not in its ` +
                    'manifest inputs');
    }
  }
  if (!sameSet(session.outputNames, part.outputs)) {
    problems.push(`${label} outputs [${session.outputNames}], manifest ` +
                  `says [${part.outputs}]`);
  }
}

async function runChain(manifestFile, manifest, byIndex, feeds, args, result,
    problems) {
  const env = new Map(Object.entries(feeds));
  const dir = path.dirname(manifestFile);
  result.chain_ms = 0;
  for (const index of manifest.order) {
    const part = byIndex.get(index);
    if (!Array.isArray(part.inputs) || !Array.isArray(part.outputs)) {
      throw new Error(`part ${index}: "inputs" and "outputs" must be arrays`);
    }
    const missing = part.inputs.filter((n) => !env.has(n));
    if (missing.length) {
      throw new Error(`part ${index} (${part.file}) needs ` +
                      `${missing.join(', ')}, which no earlier part produced ` +
                      'and which is not a model input');
    }
    const file = path.resolve(dir, part.file);
    await withSession(file, args, async (session) => {
      checkPart(session, part, file, problems);
      const partFeeds = {};
      for (const name of session.inputNames) {
        if (env.has(name)) partFeeds[name] = env.get(name);
      }
      const [outputs, ms] = await timedRun(session, partFeeds);
      result.chain_ms += ms;
      for (const [name, tensor] of Object.entries(outputs)) {
        env.set(name, tensor);
      }
    });
    ++result.parts_run;
  }
  return env;
}

// One RESULTS.json output entry: the chained tensor against the original
// run's (REFERENCE) and, when given, the test data set's (EXPECTED).
function outputEntry(name, chained, reference, expected) {
  const vsOriginal = reference ? compare(chained, reference) :
    {rel_err: Infinity, max_abs_diff: null, mismatches: null,
     problem: 'not an output of the original model'};
  return {name, dims: chained.dims, type: chained.type, ...vsOriginal,
          rel_err_expected: expected ? compare(chained, expected).rel_err :
            null};
}

async function runCase(testCase, args) {
  const result = {name: testCase.name, ok: false, error: null,
                  original_error: null, parts_run: 0, outputs: [],
                  original_ms: null, chain_ms: null};
  const problems = [];
  try {
    for (const key of ['model', 'manifest']) {
      if (typeof testCase[key] !== 'string') {
        throw new Error(`case has no "${key}"`);
      }
    }
    const {manifest, byIndex} = readManifest(testCase.manifest);
    let original;
    try {
      original = await runOriginal(testCase, manifest, args, result,
          problems);
    } catch (e) {
      // Not the split's fault: ONNX Runtime cannot run the model itself.
      result.original_error = String(e?.message ?? e);
      throw e;
    }
    const env = await runChain(testCase.manifest, manifest, byIndex,
        original.feeds, args, result, problems);
    const expected = testCase.data ? readTensorFiles(testCase.data, 'output') :
      [];
    manifest.outputs.forEach((name, i) => {
      const chained = env.get(name);
      if (!chained) {
        problems.push(`output ${name} was produced by no part`);
        return;
      }
      const entry = outputEntry(name, chained, original.outputs[name],
          expected[i]?.tensor);
      if (entry.problem) {
        problems.push(`output ${name}: ${entry.problem}`);
      } else if (entry.mismatches) {
        problems.push(`output ${name}: ${entry.mismatches} elements differ`);
      } else if (!(entry.rel_err <= args.tolerance)) {
        problems.push(`output ${name}: rel_err ${fmt(entry.rel_err)} > ` +
                      `${args.tolerance}`);
      }
      result.outputs.push(entry);
    });
  } catch (e) {
    problems.push(String(e?.message ?? e));
  }
  result.ok = problems.length === 0;
  result.error = result.ok ? null : problems.join('; ');
  return result;
}

function fmt(x) {
  return Number.isFinite(x) ? x.toExponential(1) : String(x);
}

// JSON has no infinities: write them (and NaN) as strings.
function jsonValue(key, value) {
  if (typeof value === 'number' && !Number.isFinite(value)) {
    return Number.isNaN(value) ? 'nan' : value > 0 ? 'inf' : '-inf';
  }
  return value;
}

function readCases(file) {
  try {
    const cases = JSON.parse(fs.readFileSync(file, 'utf8')).cases;
    if (!Array.isArray(cases)) throw new Error('no "cases" array');
    return cases.map((c, i) => ({name: `case_${i}`, ...c}));
  } catch (e) {
    console.error(`run_split: ${file}: ${e.message}`);
    process.exit(1);
  }
}

function runtimeVersion() {
  const require = createRequire(import.meta.url);
  try {
    return require('onnxruntime-node/package.json').version;
  } catch {
    return ort.env.versions?.node ?? 'unknown';
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const cases = readCases(args.cases);
  const results = [];
  for (const testCase of cases) {
    const r = await runCase(testCase, args);
    results.push(r);
    if (r.ok) {
      const worst = Math.max(0, ...r.outputs.map((o) => o.rel_err));
      console.log(`ok ${r.name}  parts=${r.parts_run} rel_err=${fmt(worst)}`);
    } else {
      console.log(`FAIL ${r.name}: ${r.error}`);
    }
  }
  const report = {runtime: `onnxruntime-node ${runtimeVersion()}`,
                  optimization: args.optimization, threads: args.threads,
                  tolerance: args.tolerance, results};
  fs.writeFileSync(args.results, JSON.stringify(report, jsonValue, 2) + '\n');
  const passed = results.filter((r) => r.ok).length;
  console.log(`${passed} of ${results.length} cases ok ` +
              `(${args.optimization}, ${args.threads} thread(s)); ` +
              `results: ${args.results}`);
}

main().catch((e) => {
  console.error(`run_split: ${e.message}`);
  process.exit(1);
});
