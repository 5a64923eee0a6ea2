# Installing: a CMake package (find_package(mmzip) gives mmzip::mmzip) and a pkg-config file.
include(CMakePackageConfigHelpers)
set(MMZIP_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/mmzip)
install(EXPORT mmzipTargets NAMESPACE mmzip:: DESTINATION ${MMZIP_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/mmzipConfig.cmake.in
  ${CMAKE_BINARY_DIR}/mmzipConfig.cmake INSTALL_DESTINATION ${MMZIP_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/mmzipConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/mmzipConfig.cmake ${CMAKE_BINARY_DIR}/mmzipConfigVersion.cmake
  DESTINATION ${MMZIP_CMAKE_DIR})
file(RELATIVE_PATH MMZIP_PC_TO_PREFIX "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
configure_file(${CMAKE_CURRENT_LIST_DIR}/mmzip.pc.in ${CMAKE_BINARY_DIR}/mmzip.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/mmzip.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
