# NumPy arrays (seed 004, mmnpz): random excerpts from 2,000 arrays through mmzip.open, against numpy.load of
# the .npz, numpy's mmap_mode per draw and premade maps. npz_bench.py prints the ratios and the floor.
add_test(NAME bench_npz_smoke COMMAND ${MMZIP_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/npz_bench.py --smoke)
set_tests_properties(bench_npz_smoke PROPERTIES LABELS bench TIMEOUT 300 ENVIRONMENT "${MMZIP_TEST_ENV}")

add_custom_target(npz_bench
  COMMAND ${CMAKE_COMMAND} -E env ${MMZIP_TEST_ENV} ${MMZIP_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/npz_bench.py
  USES_TERMINAL
  COMMENT "npz excerpt benchmark (about a minute; 2,000 arrays, some 700 MiB of temporary files)")
add_dependencies(bench npz_bench)
