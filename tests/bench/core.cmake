# Core store benchmarks: open (vs libzip and Python zipfile), random 4 KiB reads (vs libzip and pread),
# sequential read of a large entry (vs memcpy), batched appends at N = 10k, 100k, 1M, and what checking a
# stored entry's CRC-32 costs on each read path (core_bench_crc, vs memcpy; run by hand: core_bench_crc F 256 5).
# core_bench.py runs them all, prints the ratios and draws docs/core_bench.png.
find_package(PkgConfig REQUIRED)
pkg_check_modules(MMZIP_BENCH_LIBZIP REQUIRED IMPORTED_TARGET libzip)

foreach(b open read seq append crc)
  add_executable(core_bench_${b} ${CMAKE_CURRENT_LIST_DIR}/core_bench_${b}.c)
  target_link_libraries(core_bench_${b} PRIVATE mmzip)
  target_include_directories(core_bench_${b} PRIVATE ${CMAKE_CURRENT_LIST_DIR})
  set_target_properties(core_bench_${b} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
endforeach()
target_link_libraries(core_bench_open PRIVATE PkgConfig::MMZIP_BENCH_LIBZIP)
target_link_libraries(core_bench_read PRIVATE PkgConfig::MMZIP_BENCH_LIBZIP)

set(MMZIP_CORE_BENCH_TMP ${CMAKE_CURRENT_BINARY_DIR}/core_smoke)
file(MAKE_DIRECTORY ${MMZIP_CORE_BENCH_TMP})
add_test(NAME bench_core_open_smoke COMMAND core_bench_open ${MMZIP_CORE_BENCH_TMP}/open.zip 2000 3)
add_test(NAME bench_core_read_smoke COMMAND core_bench_read ${MMZIP_CORE_BENCH_TMP}/read.zip 500 2000)
add_test(NAME bench_core_seq_smoke COMMAND core_bench_seq ${MMZIP_CORE_BENCH_TMP}/seq.zip 8 2)
add_test(NAME bench_core_append_smoke COMMAND core_bench_append ${MMZIP_CORE_BENCH_TMP}/append.zip 2000 amortized)
add_test(NAME bench_core_crc_smoke COMMAND core_bench_crc ${MMZIP_CORE_BENCH_TMP}/crc.zip 4 2)
add_test(NAME bench_core_driver_smoke
  COMMAND ${MMZIP_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/core_bench.py --smoke --work ${MMZIP_CORE_BENCH_TMP}/driver
          --bin ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(bench_core_open_smoke bench_core_read_smoke bench_core_seq_smoke bench_core_append_smoke
  bench_core_crc_smoke bench_core_driver_smoke PROPERTIES LABELS bench TIMEOUT 300 ENVIRONMENT "${MMZIP_TEST_ENV}")
# Each smoke run writes its own archive; the driver's runs one at a time anyway.
set_tests_properties(bench_core_driver_smoke PROPERTIES RUN_SERIAL TRUE)

add_custom_target(core_bench
  COMMAND ${CMAKE_COMMAND} -E env ${MMZIP_TEST_ENV}
          ${MMZIP_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/core_bench.py --work ${CMAKE_CURRENT_BINARY_DIR}/core_work
          --bin ${CMAKE_CURRENT_BINARY_DIR} --plot ${CMAKE_SOURCE_DIR}/docs/core_bench.png
          --json ${CMAKE_CURRENT_BINARY_DIR}/core_bench.json
  DEPENDS core_bench_open core_bench_read core_bench_seq core_bench_append
  USES_TERMINAL
  COMMENT "Core store benchmarks (several minutes; needs about 2 GiB of disk under the build tree)")
add_dependencies(bench core_bench)
