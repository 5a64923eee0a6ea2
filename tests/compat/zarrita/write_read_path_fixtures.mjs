// Writes the Zarr v3 fixtures of tests/compat/test_v3_read_path.py with zarrita (an implementation nobody here
// wrote) into a directory store. Usage: node write_read_path_fixtures.mjs KIND OUTDIR
//   fills: arrays with dimension names and fill values, as zarrita writes them (fill_value only) and as xarray
//          writes Zarr v3 (an attribute "_FillValue" in xarray's encoding, given as the third argument: JSON
//          {array: encoded value}, computed by the test with the rule of xarray's FillValueCoder);
//   orphans: a root group, an array in it, and arrays below directories that have no zarr.json (zarrita
//          creates exactly the nodes it is asked for, no parent groups).
import FileSystemStore from "@zarrita/storage/fs";
import * as zarr from "zarrita";

const [kind, out, extra] = process.argv.slice(2);
const root = zarr.root(new FileSystemStore(out));
const bytes = { name: "bytes", configuration: { endian: "little" } };

async function make(path, dtype, data, fill, attrs, chunks) {
  const arr = await zarr.create(root.resolve(path), {
    shape: [data.length], chunkShape: [chunks ?? data.length], dtype, codecs: [bytes], fillValue: fill,
    dimensionNames: ["x"], attributes: attrs ?? {},
  });
  await zarr.set(arr, null, { data, shape: [data.length], stride: [1] });
}

await zarr.create(root, { attributes: { title: kind } });
if (kind === "fills") {
  const coded = JSON.parse(extra ?? "{}");
  // fill_value only: what zarrita (and zarr-python 3) write by default; xarray's v3 reader does not mask it
  await make("zero_fill", "int16", new Int16Array([1, 0, 3, 0, 5, 6]), 0);
  await make("minus999_fill", "float32", new Float32Array([1.5, -999, 2, -999, 0, 1]), -999);
  // with xarray's _FillValue attribute, as xarray's to_zarr(zarr_format=3) writes them: masked by xarray
  await make("coded_float", "float32", new Float32Array([1.5, -999, 2, -999, 0, 1]), -999, { _FillValue: coded.coded_float, units: "K" });
  await make("coded_nan", "float64", new Float64Array([1.5, NaN, 2, NaN, 0, 1]), NaN, { _FillValue: coded.coded_nan });
  await make("coded_int", "int32", new Int32Array([7, -1, 9, -1, 0, 2]), -1, { _FillValue: coded.coded_int });
  // a chunk never written: read as the fill value, and masked like a stored fill
  const sparse = await zarr.create(root.resolve("coded_sparse"), {
    shape: [6], chunkShape: [3], dtype: "float64", codecs: [bytes], fillValue: -1e30, dimensionNames: ["x"],
    attributes: { _FillValue: coded.coded_sparse },
  });
  await zarr.set(sparse, [zarr.slice(0, 3)], { data: new Float64Array([4, -1e30, 5]), shape: [3], stride: [1] });
} else if (kind === "orphans") {
  await make("top", "int32", new Int32Array([1, 2, 3]), 0);
  await make("a/b/deep", "int32", new Int32Array([4, 5, 6]), 0);
} else {
  throw new Error("unknown kind " + kind);
}
process.stdout.write(JSON.stringify({ kind }) + "\n");
