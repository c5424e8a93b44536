# What `cmake --install` puts where (GNU layout), the man pages (help2man) and the Debian package (CPack).
# The GUI looks for sample graphs in <prefix>/share/fusion-explorer/sample_graphs (app/gui/samples.cpp), lessons in
# <prefix>/share/fusion-explorer/lessons, and
# finds fusion-cli next to itself (app/gui/child_runner.cpp).
include(GNUInstallDirs)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/sample_graphs/ DESTINATION ${CMAKE_INSTALL_DATADIR}/fusion-explorer/sample_graphs
  FILES_MATCHING PATTERN "*.json")
# Workshop lessons and the run reports bundled with them, found beside the samples (app/gui/lessons_pane.cpp).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/lessons/ DESTINATION ${CMAKE_INSTALL_DATADIR}/fusion-explorer/lessons
  FILES_MATCHING PATTERN "*.json")
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs FILES_MATCHING PATTERN "*.md")
install(FILES ${PROJECT_SOURCE_DIR}/resources/completion/fusion-cli.bash
  DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME fusion-cli)
install(FILES ${PROJECT_SOURCE_DIR}/resources/completion/_fusion-cli
  DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)
if(FX_HAVE_GUI)
  install(FILES ${PROJECT_SOURCE_DIR}/resources/desktop/fusion-explorer.desktop
    DESTINATION ${CMAKE_INSTALL_DATADIR}/applications)
  install(FILES ${PROJECT_SOURCE_DIR}/resources/icons/app.svg
    DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps RENAME fusion-explorer.svg)
  # Debian's shared-mime-info and desktop-file-utils triggers update their caches when these land.
  install(FILES ${PROJECT_SOURCE_DIR}/resources/desktop/fusion-explorer-mime.xml
    DESTINATION ${CMAKE_INSTALL_DATADIR}/mime/packages RENAME fusion-explorer.xml)
endif()

# Man pages from the programs' own --help (help2man), so they never disagree. Skipped in sanitized builds,
# whose programs may report leaks at exit, and where help2man is missing (scripts/install-deps.sh --dev has it).
find_program(FX_HELP2MAN help2man)
if(FX_HELP2MAN AND NOT CMAKE_CXX_FLAGS MATCHES "-fsanitize")
  set(FX_MAN_DIR ${CMAKE_BINARY_DIR}/man)
  set(FX_MAN_PAGES ${FX_MAN_DIR}/fusion-cli.1)
  add_custom_command(OUTPUT ${FX_MAN_DIR}/fusion-cli.1
    COMMAND ${CMAKE_COMMAND} -E make_directory ${FX_MAN_DIR}
    COMMAND ${FX_HELP2MAN} --no-info --no-discard-stderr --help-option=--help-all --version-option=--version
            --section=1 --name=explore\ operator\ fusion\ in\ deep-learning\ graphs\ from\ the\ command\ line
            --output=${FX_MAN_DIR}/fusion-cli.1 $<TARGET_FILE:fusion-cli>
    DEPENDS fusion-cli VERBATIM)
  if(FX_HAVE_GUI)
    list(APPEND FX_MAN_PAGES ${FX_MAN_DIR}/fusion-explorer.1)
    add_custom_command(OUTPUT ${FX_MAN_DIR}/fusion-explorer.1
      COMMAND ${CMAKE_COMMAND} -E make_directory ${FX_MAN_DIR}
      COMMAND ${CMAKE_COMMAND} -E env --unset=DISPLAY --unset=WAYLAND_DISPLAY QT_QPA_PLATFORM=offscreen
              ${FX_HELP2MAN} --no-info --no-discard-stderr --section=1
              --name=explore\ operator\ fusion\ in\ deep-learning\ graphs
              --output=${FX_MAN_DIR}/fusion-explorer.1 $<TARGET_FILE:fusion-explorer>
      DEPENDS fusion-explorer VERBATIM)
  endif()
  add_custom_target(fx_man_pages ALL DEPENDS ${FX_MAN_PAGES})
  install(FILES ${FX_MAN_PAGES} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
else()
  message(STATUS "Fusion Explorer: help2man not found (or a sanitized build); no man pages")
endif()

# cpack -G DEB (or `cmake --build build --target package`): fusion-explorer_<version>_<arch>.deb. Its
# dependencies come from the programs' shared libraries (dpkg-shlibdeps). NVIDIA's libraries of a CUDA build
# belong to no Debian package the tool knows: they are searched as private libraries, so that package names no
# dependency for them and runs where the CUDA toolkit's libraries are installed (docs/install.md).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME fusion-explorer)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(FX_PACKAGE_MAINTAINER "Fusion Explorer developers" CACHE STRING "The Debian package's Maintainer field")
set(CPACK_PACKAGE_CONTACT "${FX_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "explore operator fusion in deep-learning graphs")
set(CPACK_PACKAGE_DESCRIPTION "Fusion Explorer shows which operators of a deep-learning graph can share a GPU kernel,
and why others cannot: a Qt desktop program (fusion-explorer) and a command-line tool (fusion-cli)
that read graph JSON and ONNX models, fuse them with a cost model, and, built with CUDA, run both plans.")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "xvfb")
# Runs on a remote GPU (fusion-cli run --target ssh://..., docs/remote.md) go through the system ssh client.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "openssh-client")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
if(FX_HAVE_CUDA)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CUDAToolkit_LIBRARY_DIR})
endif()
include(CPack)
