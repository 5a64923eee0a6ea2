# Shared appending: 1, 2 and 4 processes writing 1 GiB of Zarr chunks (64 KiB and 4 MiB) through
# mmzip.ZarrStore(shared=True), against zarr's DirectoryStore written by the same processes and one mmzip
# single writer. shared_bench.py prints the times and their ratios; the smoke test asserts no speed.
add_test(NAME bench_shared_smoke COMMAND ${MMZIP_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/shared_bench.py --smoke
         --dir ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(bench_shared_smoke PROPERTIES LABELS bench TIMEOUT 300 ENVIRONMENT "${MMZIP_TEST_ENV}")

add_custom_target(shared_bench
  COMMAND ${CMAKE_COMMAND} -E env ${MMZIP_TEST_ENV} ${MMZIP_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/shared_bench.py
          --dir ${CMAKE_CURRENT_BINARY_DIR}
  USES_TERMINAL
  COMMENT "shared appending benchmark (14 GiB written in all: 1 GiB per configuration)")
add_dependencies(bench shared_bench)
