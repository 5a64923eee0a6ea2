# zarr-python through mmzip.ZarrStore against zarr's ZipStore and DirectoryStore (1 GiB in 4 MiB and 64 KiB
# chunks, write and read) and opening an archive of 200k chunks; see zarr_bench.py and docs/performance.md.
add_test(NAME bench_zarr_smoke COMMAND ${MMZIP_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/zarr_bench.py --smoke
         --dir ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(bench_zarr_smoke PROPERTIES LABELS bench TIMEOUT 300 ENVIRONMENT "${MMZIP_TEST_ENV}")

add_custom_target(zarr_bench
  COMMAND ${CMAKE_COMMAND} -E env ${MMZIP_TEST_ENV}
          ${MMZIP_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/zarr_bench.py --dir ${CMAKE_CURRENT_BINARY_DIR}
          --json ${CMAKE_CURRENT_BINARY_DIR}/zarr_bench.json
  USES_TERMINAL
  COMMENT "zarr store benchmarks (several minutes; needs about 4 GiB of disk under the build tree)")
add_dependencies(bench zarr_bench)
