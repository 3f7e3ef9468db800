# package.cmake -- `make package`: a Debian package (CPack DEB) of what
# `make install` installs (programs, libsluice.so, sluice.h, sluice.pc) plus
# what only a system install has: the systemd unit, the example configuration
# as /etc/sluice/sluice.yaml (a conffile), the docs, and maintainer scripts
# that run ldconfig. Included at the end of CMakeLists.txt; it builds nothing.

# The system files are a component of their own that a plain
# `cmake --install` skips: their paths are absolute (/etc, /lib/systemd) and
# belong to the package only.
install(FILES ${PROJECT_SOURCE_DIR}/packaging/sluiced.service
        DESTINATION /lib/systemd/system COMPONENT system EXCLUDE_FROM_ALL)
install(FILES ${PROJECT_SOURCE_DIR}/sluice.example.yaml DESTINATION /etc/sluice
        RENAME sluice.yaml COMPONENT system EXCLUDE_FROM_ALL)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION share/doc/sluice
        COMPONENT system EXCLUDE_FROM_ALL)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION share/doc/sluice
        COMPONENT system EXCLUDE_FROM_ALL)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME sluice)
set(CPACK_PACKAGE_VENDOR sluice)
set(CPACK_PACKAGE_CONTACT "sluice developers <sluice@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "exact, compact rate limiter: daemon (RESP, HTTP), CLI and C library")
set(CPACK_PACKAGE_DESCRIPTION "sluiced answers redis-cell's CL.THROTTLE and native commands over the Redis protocol and /v1/check, forward-auth and /metrics over HTTP, alone or as a fleet sharing limits through Redis. libsluice is the C library underneath.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# DESTDIR staging: the absolute /etc and /lib paths land inside the package
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
# the default install, then the system component, into one package
set(CPACK_INSTALL_CMAKE_PROJECTS "${PROJECT_BINARY_DIR};sluice;ALL;/;${PROJECT_BINARY_DIR};sluice;system;/")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Depends: from the libraries the ELF files link (dpkg-shlibdeps, in dpkg-dev)
find_program(SL_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(SL_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
  # libsluice.so.0 is in this package: dpkg-shlibdeps must look for it here
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${PROJECT_BINARY_DIR})
else()
  message(STATUS "dpkg-shlibdeps not found (dpkg-dev): the package will declare no Depends")
endif()
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/packaging/conffiles ${PROJECT_SOURCE_DIR}/packaging/postinst
    ${PROJECT_SOURCE_DIR}/packaging/prerm ${PROJECT_SOURCE_DIR}/packaging/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
include(CPack)
