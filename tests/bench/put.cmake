# `mmzip put --dir` against `zip -0 -r`, Python zipfile (stored) and the copy floor (cat of the files into one):
# 100,000 files of 100 B and 16 files of 64 MiB. put_bench.py prints min/median/max of each and of the ratios.
add_test(NAME bench_put_smoke COMMAND ${MMZIP_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/put_bench.py --smoke
         --dir ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(bench_put_smoke PROPERTIES LABELS bench TIMEOUT 300 ENVIRONMENT "${MMZIP_TEST_ENV}")

add_custom_target(put_bench
  COMMAND ${CMAKE_COMMAND} -E env ${MMZIP_TEST_ENV} ${MMZIP_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/put_bench.py
          --dir ${CMAKE_CURRENT_BINARY_DIR}
  USES_TERMINAL
  COMMENT "mmzip put --dir benchmark (a few minutes; 10 MiB in 100,000 files, then 1 GiB in 16, each written 4 times)")
add_dependencies(bench put_bench)
