# netCDF / NCZarr benchmark: nccopy into and out of a .zarr.zip through the mmzip storage map against
# netCDF-C's own NCZarr directory store, and a full read with a C reader (nccopy_bench.py). The real run
# (512 MiB inputs) writes the figures to stdout and docs/nccopy_bench.png; the smoke test runs it at 8 MiB.
if(TARGET mmzip_nczarr)
  add_executable(nccopy_reader ${CMAKE_CURRENT_LIST_DIR}/nccopy_reader.c)
  target_link_libraries(nccopy_reader PRIVATE mmzip_netcdf)
  set_target_properties(nccopy_reader PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})

  add_test(NAME bench_nccopy_smoke
    COMMAND ${MMZIP_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/nccopy_bench.py --smoke
            --work ${CMAKE_CURRENT_BINARY_DIR}/nccopy_smoke --mmzip $<TARGET_FILE:mmzip-cli>
            --reader $<TARGET_FILE:nccopy_reader>)
  set_tests_properties(bench_nccopy_smoke PROPERTIES LABELS bench TIMEOUT 300 ENVIRONMENT "${MMZIP_TEST_ENV}")

  add_custom_target(nccopy_bench
    COMMAND ${CMAKE_COMMAND} -E env ${MMZIP_TEST_ENV}
            ${MMZIP_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/nccopy_bench.py --work ${CMAKE_CURRENT_BINARY_DIR}/nccopy_work
            --mmzip $<TARGET_FILE:mmzip-cli> --reader $<TARGET_FILE:nccopy_reader>
            --plot ${CMAKE_SOURCE_DIR}/docs/nccopy_bench.png --json ${CMAKE_CURRENT_BINARY_DIR}/nccopy_bench.json
    DEPENDS mmzip-cli mmzip_nczarr nccopy_reader
    USES_TERMINAL
    COMMENT "netCDF/NCZarr benchmark (a few minutes; needs about 2 GiB of disk under the build tree)")
  add_dependencies(bench nccopy_bench)
endif()
