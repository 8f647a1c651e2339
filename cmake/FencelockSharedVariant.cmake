# fencelock_add_shared_variant(STATIC_TARGET SHARED_TARGET [MAP from=to ...])
#
# Builds a shared library from the same sources, include directories, definitions and links as an
# existing static library, so the SDK ships as both libfencelock_x.a and libfencelock_x.so without
# the library's own CMakeLists.txt listing its sources twice (sources added there later are picked
# up here). Read after the static target is complete (at the end of the top-level CMakeLists.txt).
# MAP renames link dependencies, e.g. fencelock::protocol=fencelock_protocol_shared, so a shared
# library links the shared variants of its siblings. Private dependencies of the static library
# ($<LINK_ONLY:...> in its interface) stay private to the shared one.
function(fencelock_add_shared_variant static_target shared_target)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "" "MAP")
  get_target_property(sources ${static_target} SOURCES)
  get_target_property(source_dir ${static_target} SOURCE_DIR)
  set(absolute_sources "")
  foreach(source IN LISTS sources)
    cmake_path(ABSOLUTE_PATH source BASE_DIRECTORY "${source_dir}" OUTPUT_VARIABLE absolute)
    list(APPEND absolute_sources "${absolute}")
  endforeach()
  add_library(${shared_target} SHARED ${absolute_sources})

  foreach(property INCLUDE_DIRECTORIES INTERFACE_INCLUDE_DIRECTORIES COMPILE_DEFINITIONS
                   INTERFACE_COMPILE_DEFINITIONS COMPILE_OPTIONS INTERFACE_COMPILE_OPTIONS
                   COMPILE_FEATURES INTERFACE_COMPILE_FEATURES LINK_LIBRARIES INTERFACE_LINK_LIBRARIES)
    get_target_property(value ${static_target} ${property})
    if(NOT value)
      continue()
    endif()
    if(property STREQUAL "INTERFACE_LINK_LIBRARIES")
      list(FILTER value EXCLUDE REGEX "^\\$<LINK_ONLY:")
    endif()
    if(property MATCHES "LINK_LIBRARIES$")
      foreach(mapping IN LISTS arg_MAP)
        string(REPLACE "=" ";" pair "${mapping}")
        list(GET pair 0 from)
        list(GET pair 1 to)
        list(TRANSFORM value REPLACE "^${from}$" "${to}")
      endforeach()
    endif()
    set_property(TARGET ${shared_target} PROPERTY ${property} "${value}")
  endforeach()

  # 0.x releases promise no ABI between minor versions: the SONAME carries major.minor until 1.0.
  if(PROJECT_VERSION_MAJOR EQUAL 0)
    set(soversion "0.${PROJECT_VERSION_MINOR}")
  else()
    set(soversion "${PROJECT_VERSION_MAJOR}")
  endif()
  get_target_property(output_name ${static_target} OUTPUT_NAME)
  if(NOT output_name)
    set(output_name ${static_target})
  endif()
  set_target_properties(${shared_target} PROPERTIES
    OUTPUT_NAME ${output_name}
    VERSION ${PROJECT_VERSION}
    SOVERSION ${soversion}
    INSTALL_RPATH "$ORIGIN")
endfunction()
