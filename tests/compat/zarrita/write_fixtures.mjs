// Writes the Zarr v3 fixtures of tests/compat/test_zarr_v3.py with zarrita (an implementation nobody here
// wrote) into a directory store: every codec zarrita can encode (bytes in both byte orders, transpose,
// blosc, zstd), every numeric data type it holds, both chunk key encodings and separators, fill values
// (NaN, infinities, missing chunks), dimension names, attributes, a sub-group and a 0-d array.
// Usage: node write_fixtures.mjs OUTDIR   (prints the arrays written, as JSON, on stdout)
import FileSystemStore from "@zarrita/storage/fs";
import * as zarr from "zarrita";

const out = process.argv[2];
const store = new FileSystemStore(out);
const root = zarr.root(store);
await zarr.create(root, { attributes: { title: "written by zarrita", answer: 42, ratios: [0.5, 2], tags: ["a", "b"] } });
await zarr.create(root.resolve("grp"), { attributes: { kind: "sub-group" } });

const T = {
  int8: Int8Array, int16: Int16Array, int32: Int32Array, int64: BigInt64Array,
  uint8: Uint8Array, uint16: Uint16Array, uint32: Uint32Array, uint64: BigUint64Array,
  float32: Float32Array, float64: Float64Array, bool: Uint8Array,
};

function values(dtype, n, seed) {
  const a = new T[dtype](n);
  for (let i = 0; i < n; i++) {
    const v = (i * 37 + seed * 11) % 251 - 120;
    if (dtype === "bool") a[i] = (i + seed) % 3 === 0 ? 1 : 0;
    else if (dtype.startsWith("uint")) a[i] = dtype === "uint64" ? BigInt(Math.abs(v)) * 72057594037927936n + 7n : Math.abs(v) * (dtype === "uint8" ? 1 : 251);
    else if (dtype === "int64") a[i] = BigInt(v) * 1099511627776n - 3n;
    else if (dtype.startsWith("int")) a[i] = v * (dtype === "int8" ? 1 : 199);
    else a[i] = v / 8 + (dtype === "float64" ? 1e-9 : 0);
  }
  return dtype === "bool" ? new zarr.BoolArray(Array.from(a, (x) => x === 1)) : a;
}

const bytes = (endian) => ({ name: "bytes", configuration: { endian } });
const written = [];

async function make(path, { shape, chunks, dtype, codecs, fill, dims, attrs, sep, encoding, region }) {
  const arr = await zarr.create(root.resolve(path), {
    shape, chunkShape: chunks, dtype, codecs, fillValue: fill, dimensionNames: dims,
    attributes: attrs ?? {}, chunkSeparator: sep,
  });
  const n = shape.reduce((a, b) => a * b, 1);
  const data = values(dtype, n, written.length);
  if (region) {
    // only part of the array: the chunks outside it stay missing and read as the fill value
    const rshape = region.map((s) => s.stop - s.start);
    const rn = rshape.reduce((a, b) => a * b, 1);
    const sub = values(dtype, rn, written.length);
    await zarr.set(arr, region.map((s) => zarr.slice(s.start, s.stop)), { data: sub, shape: rshape, stride: strides(rshape) });
  } else if (shape.length === 0) {
    await zarr.set(arr, null, dtype === "bool" ? data.get(0) : data[0]);
  } else {
    await zarr.set(arr, null, { data, shape, stride: strides(shape) });
  }
  if (encoding === "v2") {
    // zarrita writes the "default" encoding; a v2-encoded array is the same chunks under v2's keys
    await retarget(path, sep ?? ".");
  }
  written.push(path);
}

function strides(shape) {
  const s = new Array(shape.length);
  let acc = 1;
  for (let i = shape.length - 1; i >= 0; i--) { s[i] = acc; acc *= shape[i]; }
  return s;
}

import * as fs from "node:fs";
import * as nodepath from "node:path";
async function retarget(path, sep) {
  const dir = nodepath.join(out, path);
  const meta = JSON.parse(fs.readFileSync(nodepath.join(dir, "zarr.json")));
  meta.chunk_key_encoding = { name: "v2", configuration: { separator: sep } };
  fs.writeFileSync(nodepath.join(dir, "zarr.json"), JSON.stringify(meta));
  const walk = (d, rel) => fs.readdirSync(d, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(nodepath.join(d, e.name), [...rel, e.name]) : [[...rel, e.name]]);
  const chunks = walk(dir, []).filter((p) => p.join("/") !== "zarr.json");
  const moved = chunks.map((parts) => {
    const indices = parts.join("/").replace(/^c[./]/, "").split(/[./]/);
    const tmp = nodepath.join(dir, "tmp." + indices.join("_"));
    fs.renameSync(nodepath.join(dir, ...parts), tmp);
    return [tmp, indices];
  });
  for (const e of fs.readdirSync(dir)) if (e === "c" || e.startsWith("c.")) fs.rmSync(nodepath.join(dir, e), { recursive: true });
  for (const [tmp, indices] of moved) {
    const target = sep === "/" ? nodepath.join(dir, ...indices) : nodepath.join(dir, indices.join("."));
    fs.mkdirSync(nodepath.dirname(target), { recursive: true });
    fs.renameSync(tmp, target);
  }
}

for (const dtype of Object.keys(T)) {
  await make(`plain_${dtype}`, { shape: [5, 7], chunks: [2, 3], dtype, codecs: [bytes("little")], fill: dtype === "bool" ? false : 0, dims: ["row", "col"] });
  if (dtype !== "bool" && dtype !== "int8" && dtype !== "uint8")
    await make(`big_${dtype}`, { shape: [9], chunks: [4], dtype, codecs: [bytes("big")], fill: 0, dims: ["nine"] });
}
await make("nan_fill", { shape: [6, 4], chunks: [3, 2], dtype: "float32", codecs: [bytes("little")], fill: NaN, region: [{ start: 0, stop: 3 }, { start: 0, stop: 4 }] });
await make("inf_fill", { shape: [10], chunks: [4], dtype: "float64", codecs: [bytes("big")], fill: -Infinity, region: [{ start: 4, stop: 8 }] });
await make("int_fill", { shape: [10], chunks: [3], dtype: "int16", codecs: [bytes("little")], fill: -99, region: [{ start: 0, stop: 3 }] });
await make("transposed", { shape: [4, 6], chunks: [3, 4], dtype: "int32", codecs: [{ name: "transpose", configuration: { order: [1, 0] } }, bytes("little")], fill: 0 });
await make("transposed3", { shape: [3, 4, 5], chunks: [2, 3, 5], dtype: "float64", codecs: [{ name: "transpose", configuration: { order: [2, 0, 1] } }, bytes("big")], fill: 0 });
await make("blosc_lz4", { shape: [40, 30], chunks: [16, 16], dtype: "float32", codecs: [bytes("little"), { name: "blosc", configuration: { cname: "lz4", clevel: 5, shuffle: "shuffle", typesize: 4, blocksize: 0 } }], fill: 0 });
await make("blosc_zstd", { shape: [50], chunks: [20], dtype: "int64", codecs: [bytes("little"), { name: "blosc", configuration: { cname: "zstd", clevel: 3, shuffle: "bitshuffle", typesize: 8, blocksize: 0 } }], fill: 0 });
await make("zstd", { shape: [6, 5], chunks: [4, 4], dtype: "uint16", codecs: [bytes("big"), { name: "zstd", configuration: { level: 3, checksum: false } }], fill: 0 });
await make("transpose_zstd", { shape: [5, 6], chunks: [5, 4], dtype: "int16", codecs: [{ name: "transpose", configuration: { order: [1, 0] } }, bytes("little"), { name: "zstd", configuration: { level: 1, checksum: false } }], fill: 0 });
await make("dot_separator", { shape: [4, 4], chunks: [2, 3], dtype: "uint32", codecs: [bytes("little")], fill: 0, sep: "." });
await make("v2_keys_dot", { shape: [5, 3], chunks: [2, 2], dtype: "int32", codecs: [bytes("little")], fill: 0, encoding: "v2", sep: "." });
await make("v2_keys_slash", { shape: [5, 3], chunks: [2, 2], dtype: "float64", codecs: [bytes("little")], fill: 0, encoding: "v2", sep: "/" });
await make("grp/inner", { shape: [3], chunks: [2], dtype: "int8", codecs: [bytes("little")], fill: 0, dims: ["three"], attrs: { units: "m", scale: 0.5, flags: [1, 2, 3] } });
await make("scalar", { shape: [], chunks: [], dtype: "float64", codecs: [bytes("little")], fill: 0 });
process.stdout.write(JSON.stringify(written) + "\n");
