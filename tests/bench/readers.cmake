# Third-party readers (Python zipfile, zarr-python's ZipStore, unzip -t, libzip ZIP_CHECKCONS) polling while one
# writer appends: mmzip put in a loop, a writer committing after every put, batches of 10, and the peer, Python's
# zipfile appending in place. The driver and the libzip poller live in tests/interop, where the bounded CTest
# (interop_readers_during_append) runs them for a few seconds; this is the long run.
add_test(NAME bench_readers_smoke
  COMMAND ${MMZIP_PYTHON} ${CMAKE_SOURCE_DIR}/tests/interop/readers_during_append.py --seconds 1
          --writers batch10,zipfile-append --cap 16000000)
set_tests_properties(bench_readers_smoke PROPERTIES LABELS bench TIMEOUT 120 ENVIRONMENT "${MMZIP_TEST_ENV}"
  RUN_SERIAL TRUE)

add_custom_target(readers_bench
  COMMAND ${CMAKE_COMMAND} -E env ${MMZIP_TEST_ENV}
          ${MMZIP_PYTHON} ${CMAKE_SOURCE_DIR}/tests/interop/readers_during_append.py --seconds 60
          --writers put-loop,commit-each,batch10,zipfile-append --cap 1000000000
          --json ${CMAKE_CURRENT_BINARY_DIR}/readers_bench.json
  DEPENDS libzip_poll
  USES_TERMINAL
  COMMENT "Third-party readers during appends (about 5 minutes; up to 1 GB of disk per archive)")
add_dependencies(bench readers_bench)
