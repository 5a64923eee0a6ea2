#!/bin/sh
# Runs the netCDF plugin's suites (CTest labels nczarr and compat) against the netCDF-C installed under PREFIX
# (bin/ncdump, lib/libnetcdf.so, include/netcdf.h), in a build tree of its own next to the default one:
#
#   tests/nczarr/run_with_netcdf.sh /work/ext/nc-4.9.3 [extra ctest arguments, e.g. -R compat_]
#
# The build tree is build-netcdf-<version> (override with MMZIP_BUILD_DIR); see docs/netcdf-guide.md,
# "Testing against another netCDF-C". Exit status: ctest's.
set -eu
prefix=${1:?usage: $0 NETCDF_PREFIX [ctest arguments...]}
shift
prefix=$(cd "$prefix" && pwd)
[ -x "$prefix/bin/nc-config" ] || { echo "$0: $prefix/bin/nc-config not found: not a netCDF-C install" >&2; exit 2; }
version=$("$prefix/bin/nc-config" --version | sed 's/^netCDF //')
[ "$("$prefix/bin/nc-config" --has-nczarr)" = yes ] || { echo "$0: netCDF-C $version under $prefix has no NCZarr" >&2; exit 2; }
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${MMZIP_BUILD_DIR:-$src/build-netcdf-$version}
jobs=${MMZIP_JOBS:-2}
echo "netCDF-C $version from $prefix; build tree $build"
cmake -S "$src" -B "$build" -DMMZIP_NETCDF_PREFIX="$prefix" -DMMZIP_WERROR=ON >/dev/null
cmake --build "$build" -j"$jobs" >/dev/null
exec ctest --test-dir "$build" -L 'nczarr|compat' --output-on-failure "$@"
