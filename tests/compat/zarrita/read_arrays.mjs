// Reads arrays of a Zarr v3 ZIP archive with zarrita (its own ZIP store and codecs: nothing of mmzip) and
// prints {path: {shape, data_type, data}} as JSON: data flattened in C order; int64/uint64 as decimal
// strings, NaN and infinities as "NaN"/"Infinity"/"-Infinity", bools as 0/1, strings as strings.
// Usage: node read_arrays.mjs ARCHIVE PATH...
import * as fs from "node:fs";
import ZipFileStore from "@zarrita/storage/zip";
import * as zarr from "zarrita";

const [archive, ...paths] = process.argv.slice(2);
const store = ZipFileStore.fromBlob(new Blob([fs.readFileSync(archive)]));
const root = zarr.root(store);
const out = {};

// zarr.get returns a strided view (a transposed chunk keeps the transpose's strides): walk it in C order.
function cOrder({ data, shape, stride }) {
  const at = (i) => (typeof data.get === "function" ? data.get(i) : data[i]);
  const n = shape.reduce((a, b) => a * b, 1);
  const values = new Array(n);
  const index = new Array(shape.length).fill(0);
  for (let k = 0; k < n; k++) {
    values[k] = at(index.reduce((acc, i, d) => acc + i * stride[d], 0));
    for (let d = shape.length - 1; d >= 0 && ++index[d] === shape[d]; d--) index[d] = 0;
  }
  return values;
}
for (const path of paths) {
  const arr = await zarr.open.v3(root.resolve(path), { kind: "array" });
  const chunk = await zarr.get(arr, null);
  const flat = chunk.data === undefined ? [chunk] : cOrder(chunk);
  out[path] = {
    shape: arr.shape,
    data_type: arr.dtype,
    data: flat.map((v) => {
      if (typeof v === "bigint") return v.toString();
      if (typeof v === "boolean") return v ? 1 : 0;
      if (typeof v === "number" && !Number.isFinite(v)) return Number.isNaN(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity";
      return v;
    }),
  };
}
process.stdout.write(JSON.stringify(out) + "\n");
