# `cmake --install`: what goes where (GNUInstallDirs), and the SDK as a package other projects
# consume with find_package(fencelock) or pkg-config (docs/operations.md, "Install").
#
#   bin/        fencelockd, fencelock
#   include/    fencelock/*.h (the SDK's and the protocol's public headers; no Boost in them)
#   lib/        libfencelock_{protocol,client,fenced_table}.a and .so (SONAME libX.so.0.<minor>)
#   lib/cmake/fencelock/   fencelockConfig.cmake, its version file, the exported targets
#   lib/pkgconfig/         fencelock.pc (the shared client), fencelock-fenced-table.pc
#   lib/systemd/system/    fencelockd.service;  etc/default/fencelockd: its options
#   share/man/man1, man8   fencelock.1.gz, fencelockd.8.gz (help2man, from the binaries' --help)
#   share/bash-completion/completions/   fencelock, fencelockd
#   share/zsh/vendor-completions/        _fencelock, _fencelockd
#   share/fish/vendor_completions.d/     fencelock.fish, fencelockd.fish
#   share/doc/<package>/   copyright, changelog.gz (one per Debian package)
#
# Every file belongs to one component, which is one Debian package (FencelockPackage.cmake):
# server (fencelockd), cli (fencelock-cli), lib (libfencelock0), dev (libfencelock-dev).
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
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT lib NAMELINK_COMPONENT dev
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/protocol/include/ ${PROJECT_SOURCE_DIR}/client-sdk/include/
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev FILES_MATCHING PATTERN "*.h")
install(TARGETS fencelock RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT cli)
if(FENCELOCK_BUILD_SERVICE)
  install(TARGETS fencelockd RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT server)
endif()

# The CMake package.
set(FENCELOCK_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/fencelock)
install(EXPORT fencelockTargets NAMESPACE fencelock:: DESTINATION ${FENCELOCK_CMAKE_DIR} COMPONENT dev)
configure_package_config_file(cmake/fencelockConfig.cmake.in
  ${PROJECT_BINARY_DIR}/fencelockConfig.cmake INSTALL_DESTINATION ${FENCELOCK_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/fencelockConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/fencelockConfig.cmake ${PROJECT_BINARY_DIR}/fencelockConfigVersion.cmake
  DESTINATION ${FENCELOCK_CMAKE_DIR} COMPONENT dev)

# pkg-config. ${pcfiledir}-relative paths keep the files right in any prefix (and in a DESTDIR).
file(RELATIVE_PATH FENCELOCK_PC_TO_PREFIX "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
string(REGEX REPLACE "/$" "" FENCELOCK_PC_TO_PREFIX "${FENCELOCK_PC_TO_PREFIX}")
foreach(pc fencelock fencelock-fenced-table)
  configure_file(packaging/pkgconfig/${pc}.pc.in ${PROJECT_BINARY_DIR}/packaging/${pc}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/packaging/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
    COMPONENT dev)
endforeach()

# systemd, with the service: the unit (under <prefix>/lib/systemd/system, which systemd reads for
# /usr and /usr/local) and the environment file holding fencelockd's options.
if(FENCELOCK_BUILD_SERVICE)
  set(FENCELOCK_SYSTEMD_UNIT_DIR "lib/systemd/system" CACHE STRING
    "Where fencelockd.service is installed, relative to the prefix")
  set(FENCELOCK_ENVIRONMENT_FILE "${CMAKE_INSTALL_FULL_SYSCONFDIR}/default/fencelockd")
  configure_file(packaging/systemd/fencelockd.service.in ${PROJECT_BINARY_DIR}/packaging/fencelockd.service @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/packaging/fencelockd.service DESTINATION ${FENCELOCK_SYSTEMD_UNIT_DIR}
    COMPONENT server)
  # GNUInstallDirs maps the prefix /usr to /etc only in the FULL variable: use it there (the .deb).
  if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
    set(fencelock_sysconf_destination ${CMAKE_INSTALL_FULL_SYSCONFDIR})
  else()
    set(fencelock_sysconf_destination ${CMAKE_INSTALL_SYSCONFDIR})
  endif()
  install(FILES packaging/systemd/fencelockd.default DESTINATION ${fencelock_sysconf_destination}/default
    RENAME fencelockd COMPONENT server)
endif()

# Completion for bash, zsh and fish, where Debian's shells look for packaged completion.
function(fencelock_install_completion program component)
  install(FILES packaging/bash-completion/${program}
    DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions COMPONENT ${component})
  install(FILES packaging/zsh-completion/_${program}
    DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions COMPONENT ${component})
  install(FILES packaging/fish-completion/${program}.fish
    DESTINATION ${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d COMPONENT ${component})
endfunction()
fencelock_install_completion(fencelock cli)
if(FENCELOCK_BUILD_SERVICE)
  fencelock_install_completion(fencelockd server)
endif()

# Man pages from the binaries' own --help and --version, so they cannot drift from them; the
# sections help2man cannot know (description, files, see also) come from packaging/man/*.h2m.
function(fencelock_add_manpage program section component summary)
  set(page ${PROJECT_BINARY_DIR}/man/${program}.${section})  # installed gzipped, as Debian wants
  set(include_file ${PROJECT_SOURCE_DIR}/packaging/man/${program}.h2m)
  add_custom_command(OUTPUT ${page}.gz
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/man
    COMMAND ${FENCELOCK_HELP2MAN} --no-info --section=${section} --source=fencelock
            --name=${summary} --include=${include_file} --output=${page} $<TARGET_FILE:${program}>
    COMMAND gzip -9nf ${page}
    DEPENDS ${program} ${include_file} VERBATIM)
  add_custom_target(fencelock_manpage_${program} ALL DEPENDS ${page}.gz)
  install(FILES ${page}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section} COMPONENT ${component})
endfunction()
if(FENCELOCK_MANPAGES)
  find_program(FENCELOCK_HELP2MAN help2man)
endif()
if(FENCELOCK_MANPAGES AND NOT FENCELOCK_HELP2MAN)
  # A missing documentation tool should not stop a developer's build; scripts/test-install.sh
  # fails when an install lacks the pages.
  message(WARNING "help2man not found: no man pages (scripts/install-deps.sh installs it)")
elseif(FENCELOCK_MANPAGES)
  fencelock_add_manpage(fencelock 1 cli "command-line client of the fencelockd lock service")
  if(FENCELOCK_BUILD_SERVICE)
    fencelock_add_manpage(fencelockd 8 server "${PROJECT_DESCRIPTION}")
  endif()
endif()

# Each package's documentation directory, as Debian wants it: copyright and changelog.gz.
set(fencelock_changelog ${PROJECT_BINARY_DIR}/packaging/changelog.gz)
add_custom_command(OUTPUT ${fencelock_changelog}
  COMMAND gzip -9nc ${PROJECT_SOURCE_DIR}/packaging/debian/changelog > ${fencelock_changelog}
  DEPENDS ${PROJECT_SOURCE_DIR}/packaging/debian/changelog VERBATIM)
add_custom_target(fencelock_changelog ALL DEPENDS ${fencelock_changelog})
set(fencelock_doc_components cli lib dev)
set(fencelock_doc_packages fencelock-cli libfencelock0 libfencelock-dev)
if(FENCELOCK_BUILD_SERVICE)
  list(APPEND fencelock_doc_components server)
  list(APPEND fencelock_doc_packages fencelockd)
endif()
foreach(component package IN ZIP_LISTS fencelock_doc_components fencelock_doc_packages)
  install(FILES packaging/debian/copyright ${fencelock_changelog}
    DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${package} COMPONENT ${component})
endforeach()
