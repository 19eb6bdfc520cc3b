# tilec_add_kernels(TARGET
#                   SOURCES a.tile [b.tile ...]
#                   [DEFINES NAME=VALUE ...]     # -D for every source
#                   [ARCH sm_90a [sm_80 ...]]    # --arch (several: one image each in the header)
#                   [INCLUDE_DIRS dir ...]       # -I: where imported modules are looked up
#                   [NAMESPACE ns]               # --namespace (one source only)
#                   [OUTPUT_DIR dir]             # default: <binary dir>/tilec/<TARGET>
#                   [C_HEADER]                   # also STEM_c.h (--emit c-header)
#                   [OPTIONS ...])               # any other tilec compile options
#
# Compiles each source at build time into OUTPUT_DIR/STEM.h (tilec compile --emit header) and
# makes TARGET depend on it: the directory is added to TARGET's include path and TARGET links
# tilec::runtime. Each compile writes a depfile (-MD -MF), so editing a source or any module it
# imports (the stdlib's included) rebuilds exactly the headers that use it, and what includes them.
function(tilec_add_kernels target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "C_HEADER" "NAMESPACE;OUTPUT_DIR"
                        "SOURCES;DEFINES;ARCH;INCLUDE_DIRS;OPTIONS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "tilec_add_kernels: unexpected arguments: ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "tilec_add_kernels(${target}): SOURCES is empty")
  endif()
  list(LENGTH ARG_SOURCES count)
  if(ARG_NAMESPACE AND count GREATER 1)
    message(FATAL_ERROR "tilec_add_kernels(${target}): NAMESPACE needs a single source")
  endif()
  if(NOT ARG_OUTPUT_DIR)
    set(ARG_OUTPUT_DIR "${CMAKE_CURRENT_BINARY_DIR}/tilec/${target}")
  endif()
  file(MAKE_DIRECTORY "${ARG_OUTPUT_DIR}")

  set(args)
  foreach(d IN LISTS ARG_DEFINES)
    list(APPEND args -D "${d}")
  endforeach()
  foreach(dir IN LISTS ARG_INCLUDE_DIRS)
    get_filename_component(dir "${dir}" ABSOLUTE)
    list(APPEND args -I "${dir}")
  endforeach()
  if(ARG_ARCH)
    list(JOIN ARG_ARCH "," arch)
    list(APPEND args --arch "${arch}")
  endif()
  if(ARG_NAMESPACE)
    list(APPEND args --namespace "${ARG_NAMESPACE}")
  endif()
  set(emit header)
  if(ARG_C_HEADER)
    set(emit header,c-header)
  endif()

  set(headers)
  foreach(src IN LISTS ARG_SOURCES)
    get_filename_component(src "${src}" ABSOLUTE)
    get_filename_component(stem "${src}" NAME_WE)
    set(outputs "${ARG_OUTPUT_DIR}/${stem}.h")
    if(ARG_C_HEADER)
      list(APPEND outputs "${ARG_OUTPUT_DIR}/${stem}_c.h")
    endif()
    add_custom_command(
      OUTPUT ${outputs}
      COMMAND tilec::tilec compile "${src}" -o "${ARG_OUTPUT_DIR}" --emit ${emit} ${args}
              ${ARG_OPTIONS} -MD -MF "${ARG_OUTPUT_DIR}/${stem}.d"
      DEPENDS "${src}" "${TILEC_EXECUTABLE}"
      DEPFILE "${ARG_OUTPUT_DIR}/${stem}.d"
      COMMENT "tilec: compiling ${stem}.tile"
      VERBATIM)
    list(APPEND headers ${outputs})
  endforeach()
  target_sources(${target} PRIVATE ${headers})
  target_include_directories(${target} PRIVATE "${ARG_OUTPUT_DIR}")
  target_link_libraries(${target} PRIVATE tilec::runtime)
endfunction()
