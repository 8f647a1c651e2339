# `cmake --install`: what goes where (GNUInstallDirs), and the SDK as a package other projects
# consume with find_package(fencelock) or pkg-config (docs/operations.md, "Install").
#
#   bin/        fencelockd, fencelock
#   include/    fencelock/*.h (the SDK's and the protocol's public headers; no Boost in them)
#   lib/        libfencelock_{protocol,client,fenced_table}.a and .so (SONAME libX.so.0.<minor>)
#   lib/cmake/fencelock/   fencelockConfig.cmake, its version file, the exported targets
#   lib/pkgconfig/         fencelock.pc (the shared client), fencelock-fenced-table.pc
#   lib/systemd/system/    fencelockd.service;  etc/default/fencelockd: its options
#   share/man/man1, man8   fencelock.1, fencelockd.8 (help2man, from the binaries' --help)
#   share/bash-completion/completions/   fencelock, fencelockd
#
# Exported targets: fencelock::client, fencelock::protocol, fencelock::fenced_table (static; the
# same names as in this tree) and fencelock::client_shared, fencelock::protocol_shared,
# fencelock::fenced_table_shared. Nothing exported needs Catch2, tcmalloc, Boost or hiredis.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
include(cmake/FencelockSharedVariant.cmake)

fencelock_add_shared_variant(fencelock_protocol fencelock_protocol_shared)
fencelock_add_shared_variant(fencelock_client fencelock_client_shared
  MAP fencelock::protocol=fencelock_protocol_shared fencelock_protocol=fencelock_protocol_shared)
fencelock_add_shared_variant(fencelock_fenced_table fencelock_fenced_table_shared
  MAP fencelock::client=fencelock_client_shared fencelock_client=fencelock_client_shared)
foreach(library protocol client fenced_table)
  add_library(fencelock::${library}_shared ALIAS fencelock_${library}_shared)
  set_target_properties(fencelock_${library}_shared PROPERTIES EXPORT_NAME ${library}_shared)
endforeach()

set(FENCELOCK_SDK_TARGETS
  fencelock_protocol fencelock_client fencelock_fenced_table
  fencelock_protocol_shared fencelock_client_shared fencelock_fenced_table_shared)
install(TARGETS ${FENCELOCK_SDK_TARGETS} EXPORT fencelockTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/protocol/include/ ${PROJECT_SOURCE_DIR}/client-sdk/include/
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
install(TARGETS fencelockd fencelock RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# The CMake package.
set(FENCELOCK_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/fencelock)
install(EXPORT fencelockTargets NAMESPACE fencelock:: DESTINATION ${FENCELOCK_CMAKE_DIR})
configure_package_config_file(cmake/fencelockConfig.cmake.in
  ${PROJECT_BINARY_DIR}/fencelockConfig.cmake INSTALL_DESTINATION ${FENCELOCK_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/fencelockConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/fencelockConfig.cmake ${PROJECT_BINARY_DIR}/fencelockConfigVersion.cmake
  DESTINATION ${FENCELOCK_CMAKE_DIR})

# pkg-config. ${pcfiledir}-relative paths keep the files right in any prefix (and in a DESTDIR).
file(RELATIVE_PATH FENCELOCK_PC_TO_PREFIX "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
string(REGEX REPLACE "/$" "" FENCELOCK_PC_TO_PREFIX "${FENCELOCK_PC_TO_PREFIX}")
foreach(pc fencelock fencelock-fenced-table)
  configure_file(packaging/pkgconfig/${pc}.pc.in ${PROJECT_BINARY_DIR}/packaging/${pc}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/packaging/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()

# systemd: the unit (under <prefix>/lib/systemd/system, which systemd reads for /usr and /usr/local)
# and the environment file holding fencelockd's options.
set(FENCELOCK_SYSTEMD_UNIT_DIR "lib/systemd/system" CACHE STRING
  "Where fencelockd.service is installed, relative to the prefix")
set(FENCELOCK_ENVIRONMENT_FILE "${CMAKE_INSTALL_FULL_SYSCONFDIR}/default/fencelockd")
configure_file(packaging/systemd/fencelockd.service.in ${PROJECT_BINARY_DIR}/packaging/fencelockd.service @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/packaging/fencelockd.service DESTINATION ${FENCELOCK_SYSTEMD_UNIT_DIR})
# GNUInstallDirs maps the prefix /usr to /etc only in the FULL variable: use it there (the .deb).
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(fencelock_sysconf_destination ${CMAKE_INSTALL_FULL_SYSCONFDIR})
else()
  set(fencelock_sysconf_destination ${CMAKE_INSTALL_SYSCONFDIR})
endif()
install(FILES packaging/systemd/fencelockd.default DESTINATION ${fencelock_sysconf_destination}/default
  RENAME fencelockd)

# Bash completion.
install(FILES packaging/bash-completion/fencelock packaging/bash-completion/fencelockd
  DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)

# Man pages from the binaries' own --help and --version, so they cannot drift from them.
if(FENCELOCK_MANPAGES)
  find_program(FENCELOCK_HELP2MAN help2man REQUIRED)
  set(man_dir ${PROJECT_BINARY_DIR}/man)
  add_custom_command(OUTPUT ${man_dir}/fencelockd.8
    COMMAND ${CMAKE_COMMAND} -E make_directory ${man_dir}
    COMMAND ${FENCELOCK_HELP2MAN} --no-info --section=8 --source=fencelock
            --name=${PROJECT_DESCRIPTION} --include=${PROJECT_SOURCE_DIR}/packaging/man/fencelockd.h2m
            --output=${man_dir}/fencelockd.8 $<TARGET_FILE:fencelockd>
    DEPENDS fencelockd ${PROJECT_SOURCE_DIR}/packaging/man/fencelockd.h2m VERBATIM)
  add_custom_command(OUTPUT ${man_dir}/fencelock.1
    COMMAND ${CMAKE_COMMAND} -E make_directory ${man_dir}
    COMMAND ${FENCELOCK_HELP2MAN} --no-info --section=1 --source=fencelock
            "--name=command-line client of the fencelockd lock service"
            --include=${PROJECT_SOURCE_DIR}/packaging/man/fencelock.h2m
            --output=${man_dir}/fencelock.1 $<TARGET_FILE:fencelock>
    DEPENDS fencelock ${PROJECT_SOURCE_DIR}/packaging/man/fencelock.h2m VERBATIM)
  add_custom_target(fencelock_manpages ALL DEPENDS ${man_dir}/fencelockd.8 ${man_dir}/fencelock.1)
  install(FILES ${man_dir}/fencelock.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
  install(FILES ${man_dir}/fencelockd.8 DESTINATION ${CMAKE_INSTALL_MANDIR}/man8)
endif()

install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})
