# What keeps a cold build short on a small machine (measured in docs/results/build-time/).
#
# Unity build: each target's files are compiled in batches of 8, one translation unit per batch, so
# the heavy headers (CLI11, toml++, nlohmann/json, GoogleTest) and the inline functions they
# instantiate are compiled once per batch instead of once per file: it halves a cold build here.
# The price: names in one file's anonymous namespace must not clash with another file's of the
# same target (give helpers specific names). FEDPAR_UNITY=OFF compiles file by file, for quick
# rebuilds of one file and to check that each file includes what it uses.
option(FEDPAR_UNITY "Compile each target's files in batches of 8 (faster cold builds)" ON)
if(FEDPAR_UNITY)
  set(CMAKE_UNITY_BUILD ON)
  set(CMAKE_UNITY_BUILD_BATCH_SIZE 8)
  message(STATUS "fedpar: unity build, files in batches of 8 (-DFEDPAR_UNITY=OFF: file by file)")
endif()

# ccache, when installed, serves rebuilds of unchanged batches from its cache.
find_program(FEDPAR_CCACHE ccache)
if(FEDPAR_CCACHE)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${FEDPAR_CCACHE})
  message(STATUS "fedpar: compiling through ${FEDPAR_CCACHE}")
endif()
