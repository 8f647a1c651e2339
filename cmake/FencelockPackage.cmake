# `cpack -G DEB` (from a build configured with -DCMAKE_INSTALL_PREFIX=/usr, as
# scripts/test-install.sh does): one Debian package "fencelock" with everything `cmake --install`
# puts down. Its library dependencies are computed by dpkg-shlibdeps (dpkg-dev); the maintainer
# scripts (packaging/debian/) create the system user `fencelock` and leave the service disabled and
# stopped: an operator sets the lock nodes in /etc/default/fencelockd, then enables it.
set(CPACK_PACKAGE_NAME fencelock)
set(CPACK_PACKAGE_VENDOR "The fencelock authors")
set(CPACK_PACKAGE_CONTACT "The fencelock authors <fencelock@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Redlock quorum locks with fencing tokens: fencelockd, CLI and C++ SDK")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_GENERATOR DEB)
set(CPACK_STRIP_FILES ON)

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "Redlock quorum locks with fencing tokens
 fencelockd serves Redlock quorum locks over independent Redis masters
 through an HTTP/JSON API; every grant carries a fencing token from a
 linearizable counter (SQLite, a dedicated Redis master or etcd). Also
 ships the fencelock command-line client and the C++ SDK (headers, static
 and shared libraries, CMake package and pkg-config files).")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)  # the shlibs file for the SDK's shared libraries
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "redis-server")
# Building against the static SDK needs the OpenSSL, SQLite and libpq development files.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "libssl-dev, libsqlite3-dev, libpq-dev, pkg-config")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  ${PROJECT_SOURCE_DIR}/packaging/debian/postinst
  ${PROJECT_SOURCE_DIR}/packaging/debian/prerm
  ${PROJECT_SOURCE_DIR}/packaging/debian/postrm
  ${PROJECT_SOURCE_DIR}/packaging/debian/conffiles
  ${PROJECT_SOURCE_DIR}/packaging/debian/triggers)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

include(CPack)
