# Third-party readers (Python zipfile, zarr-python's ZipStore, unzip -t, libzip ZIP_CHECKCONS) polling while one
# writer appends: mmzip put in a loop, C and Python writers that commit after every put, in batches of 10, or
# open a session per put; from no file, an empty archive and a 1 GiB one; and the peer, Python's zipfile
# appending in place. The driver, the C writer and the libzip poller live in tests/interop, where the bounded
# CTest (interop_readers_during_append) runs them on fewer entries; this is the long run, judged against the
# targets of issue 24 (failed polls, bursts). A cell runs more rounds until each poller but unzip has polled 300
# times while the writer ran: the writers that commit in batches finish a 1 GiB cell in 2-3 s, in which libzip
# polls a 1 GiB archive some 30 times, too few to judge a rate of 0.1 % (one failed poll would be 3 %).
add_test(NAME bench_readers_smoke
  COMMAND ${MMZIP_PYTHON} ${CMAKE_SOURCE_DIR}/tests/interop/readers_during_append.py --entries 50
          --writers c-batch10,zipfile-append --starts empty)
set_tests_properties(bench_readers_smoke PROPERTIES LABELS bench TIMEOUT 120 ENVIRONMENT "${MMZIP_TEST_ENV}"
  RUN_SERIAL TRUE)

add_custom_target(readers_bench
  COMMAND ${CMAKE_COMMAND} -E env ${MMZIP_TEST_ENV}
          ${MMZIP_PYTHON} ${CMAKE_SOURCE_DIR}/tests/interop/readers_during_append.py --entries 1500
          --writers put-loop,c-put-loop,py-put-loop,c-commit-each,py-commit-each,c-batch10,py-batch10,zipfile-append
          --starts none,empty,large --large-size 1073741824 --min-polls 300 --min-unzip-polls 1 --assert-targets
          --json ${CMAKE_CURRENT_BINARY_DIR}/readers_bench.json
  DEPENDS libzip_poll c_writer growth_probe tail_probe
  USES_TERMINAL
  COMMENT "Third-party readers during appends (about 35 minutes on a quiet 2-core machine, 50 under load; up to 2 GiB of disk)")
add_dependencies(bench readers_bench)
