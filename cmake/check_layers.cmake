# The layers, checked on every build (a wrong-way include fails it, naming the file and line):
#   core <- kernels, core <- partitioners, core <- protocol <- transport,
#   {core, partitioners, protocol, transport} <- server, {core, protocol, transport} <- clients,
#   everything <- experiments; tests/, bench/ and fuzz/ may include anything.
# Run: cmake -DSOURCE_DIR=<tree> -P cmake/check_layers.cmake
cmake_minimum_required(VERSION 3.24)
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "check_layers: pass -DSOURCE_DIR=<the tree to check>")
endif()

set(allowed_core core)
set(allowed_kernels core kernels)
set(allowed_partitioners core partitioners)
set(allowed_protocol core protocol)
set(allowed_transport core protocol transport)
set(allowed_server core partitioners protocol transport server)
set(allowed_clients core protocol transport clients)
set(allowed_experiments core kernels partitioners protocol transport server clients experiments)
set(layers core kernels partitioners protocol transport server clients experiments)

set(violations "")
set(files_checked 0)
foreach(layer IN LISTS layers)
  file(GLOB_RECURSE sources "${SOURCE_DIR}/${layer}/*.h" "${SOURCE_DIR}/${layer}/*.cc"
                            "${SOURCE_DIR}/${layer}/*.cu" "${SOURCE_DIR}/${layer}/*.cuh")
  foreach(file IN LISTS sources)
    math(EXPR files_checked "${files_checked} + 1")
    file(STRINGS "${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<]")
    foreach(line IN LISTS lines)
      string(REGEX MATCH "[\"<]([a-z_]+)/" _ "${line}")
      set(target "${CMAKE_MATCH_1}")
      if(target AND target IN_LIST layers AND NOT target IN_LIST allowed_${layer})
        file(RELATIVE_PATH rel "${SOURCE_DIR}" "${file}")
        string(STRIP "${line}" line)
        list(JOIN allowed_${layer} ", " allowed)
        list(APPEND violations "  ${rel}: ${line}  (${layer}/ may include only ${allowed})")
      endif()
    endforeach()
  endforeach()
endforeach()

if(violations)
  list(JOIN violations "\n" text)
  message(FATAL_ERROR "fedpar layers: wrong-way includes (see cmake/check_layers.cmake):\n${text}\n"
                      "Move what both sides need to a layer below them.")
endif()
if(files_checked EQUAL 0)
  message(FATAL_ERROR "check_layers: no sources under ${SOURCE_DIR}")
endif()
