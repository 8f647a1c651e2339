# `cpack -G DEB` (from a build configured with -DCMAKE_INSTALL_PREFIX=/usr, as
# scripts/test-install.sh does): four Debian packages, one per install component
# (FencelockInstall.cmake), so that a client host installs the CLI or the SDK without the server's
# dependencies (hiredis, tcmalloc) and without its system user:
#   fencelockd        the service: binary, systemd unit, /etc/default/fencelockd, man page; its
#                     maintainer scripts (packaging/debian/) create the user `fencelock` and leave
#                     the service disabled: an operator sets the lock nodes, then enables it
#   fencelock-cli     the command-line client
#   libfencelock0     the SDK's shared libraries
#   libfencelock-dev  headers, static libraries, the CMake package and pkg-config files
# Library dependencies are computed by dpkg-shlibdeps (dpkg-dev); lintian accepts them without
# errors (scripts/test-install.sh).
set(FENCELOCK_MAINTAINER "fencelock maintainers <maintainers@fencelock.dev>" CACHE STRING
  "The Maintainer field of the Debian packages")
set(CPACK_PACKAGE_NAME fencelock)
set(CPACK_PACKAGE_VENDOR "The fencelock authors")
set(CPACK_PACKAGE_CONTACT "${FENCELOCK_MAINTAINER}")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_GENERATOR DEB)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL server cli lib dev)
if(NOT FENCELOCK_BUILD_SERVICE)
  list(REMOVE_ITEM CPACK_COMPONENTS_ALL server)
endif()

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# Each description: the synopsis, then paragraphs separated by an empty line (CPack indents them).
# No package-wide summary: CPack would put it above every package's own synopsis.
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "")
set(fencelock_about "fencelock serves Redlock quorum locks over independent Redis masters through
an HTTP/JSON API; every grant carries a fencing token from a linearizable
counter (SQLite, a dedicated Redis master or etcd), which a resource uses to
refuse the writes of a holder whose lease ran out.")

set(CPACK_DEBIAN_SERVER_PACKAGE_NAME fencelockd)
set(CPACK_DEBIAN_SERVER_PACKAGE_SECTION net)
set(CPACK_DEBIAN_SERVER_DESCRIPTION "Redlock quorum lock service with fencing tokens
${fencelock_about}

This package holds the service, fencelockd, with a hardened systemd unit.")
set(CPACK_DEBIAN_SERVER_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_SERVER_PACKAGE_RECOMMENDS "redis-server, fencelock-cli")
set(CPACK_DEBIAN_SERVER_PACKAGE_CONTROL_EXTRA
  ${PROJECT_SOURCE_DIR}/packaging/debian/postinst
  ${PROJECT_SOURCE_DIR}/packaging/debian/prerm
  ${PROJECT_SOURCE_DIR}/packaging/debian/postrm
  ${PROJECT_SOURCE_DIR}/packaging/debian/conffiles)

set(CPACK_DEBIAN_CLI_PACKAGE_NAME fencelock-cli)
set(CPACK_DEBIAN_CLI_PACKAGE_SECTION net)
set(CPACK_DEBIAN_CLI_DESCRIPTION "command-line client of the fencelock lock service
${fencelock_about}

This package holds fencelock, the command-line client: it runs a command
under a lock (for cron jobs and scripts), or takes, extends and releases one.")

set(CPACK_DEBIAN_LIB_PACKAGE_NAME libfencelock0)
set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_LIB_DESCRIPTION "C++ client library of the fencelock lock service
${fencelock_about}

This package holds the shared libraries of the C++ SDK.")
# A shlibs file for the packages that hold shared libraries (libfencelock0 only).
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_LIB_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/packaging/debian/triggers)

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libfencelock-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_DESCRIPTION "C++ client library of the fencelock lock service (development files)
${fencelock_about}

This package holds the C++ SDK's headers, static libraries, CMake package
(find_package(fencelock)) and pkg-config files.")
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libfencelock0 (= ${PROJECT_VERSION})")
# Building against the static SDK needs the OpenSSL, SQLite and libpq development files.
set(CPACK_DEBIAN_DEV_PACKAGE_SUGGESTS "libssl-dev, libsqlite3-dev, libpq-dev, pkg-config")

include(CPack)
