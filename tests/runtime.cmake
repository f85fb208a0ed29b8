# Tests of runtime/, the sources copied into every generated project.
# Included from tests/CMakeLists.txt. The runtime files are compiled as C++17,
# as a generated project compiles them, so a C++20-ism in runtime/ fails here.
include(GoogleTest)

set(TG_RUNTIME_DIR ${CMAKE_SOURCE_DIR}/runtime)
find_program(TG_RUNTIME_PYTHON3 NAMES python3)  # numpy cross-checks; skipped without it
if(NOT TG_RUNTIME_PYTHON3)
  set(TG_RUNTIME_PYTHON3 "")
endif()

# The source lists of a generated project (keep in sync with the emitter):
#   libmodel.so = model.cpp + TG_RUNTIME_MODEL_SOURCES
#   main_test   = TG_RUNTIME_MAIN_TEST_SOURCES, linked to libmodel
set(TG_RUNTIME_MODEL_SOURCES ${TG_RUNTIME_DIR}/weights_file.cpp)
set(TG_RUNTIME_MAIN_TEST_SOURCES
  ${TG_RUNTIME_DIR}/main_test.cpp
  ${TG_RUNTIME_DIR}/main_test_options.cpp
  ${TG_RUNTIME_DIR}/npy.cpp
  ${TG_RUNTIME_DIR}/bench_stats.cpp
  ${TG_RUNTIME_DIR}/json_writer.cpp
  ${TG_RUNTIME_DIR}/tensor_compare.cpp
  ${TG_RUNTIME_DIR}/random_fill.cpp
  ${TG_RUNTIME_DIR}/peak_memory.cpp
  ${TG_RUNTIME_DIR}/kernel_profile.cpp)

function(runtime_cxx17 target)
  set_target_properties(${target} PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF)
  target_include_directories(${target} PRIVATE ${TG_RUNTIME_DIR})
endfunction()

# A generated project in miniature, with a hand-written model in place of the
# generated model.cpp.
add_library(runtime_fake_model SHARED
  ${CMAKE_SOURCE_DIR}/tests/unit/runtime_fake_model.cpp ${TG_RUNTIME_MODEL_SOURCES})
runtime_cxx17(runtime_fake_model)
add_executable(runtime_fake_main_test ${TG_RUNTIME_MAIN_TEST_SOURCES})
target_link_libraries(runtime_fake_main_test PRIVATE runtime_fake_model)
set_target_properties(runtime_fake_main_test PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
runtime_cxx17(runtime_fake_main_test)

# The pure helpers, for the unit tests: everything but main_test.cpp and
# kernel_profile.cpp, which call the model's C API.
set(support_sources ${TG_RUNTIME_MAIN_TEST_SOURCES} ${TG_RUNTIME_MODEL_SOURCES})
list(REMOVE_ITEM support_sources ${TG_RUNTIME_DIR}/main_test.cpp ${TG_RUNTIME_DIR}/kernel_profile.cpp)
add_library(runtime_support STATIC ${support_sources})
runtime_cxx17(runtime_support)
target_include_directories(runtime_support PUBLIC ${TG_RUNTIME_DIR})

# runtime_gtest(NAME [extra sources or libraries...])
function(runtime_gtest name)
  add_executable(${name} ${CMAKE_SOURCE_DIR}/tests/unit/${name}.cpp)
  target_link_libraries(${name} PRIVATE runtime_support GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE TG_RUNTIME_PYTHON3="${TG_RUNTIME_PYTHON3}")
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
  gtest_discover_tests(${name} TEST_PREFIX "runtime.")
endfunction()

runtime_gtest(runtime_npy_test)
target_link_libraries(runtime_npy_test PRIVATE tg_driver)  # driver/process: python runs without a shell
runtime_gtest(runtime_stats_test)
runtime_gtest(runtime_weights_file_test)
runtime_gtest(runtime_json_writer_test)
runtime_gtest(runtime_tensor_compare_test)
runtime_gtest(runtime_random_fill_test)
runtime_gtest(runtime_peak_memory_test)
runtime_gtest(runtime_main_test_options_test)
runtime_gtest(runtime_kernel_profile_test)
target_sources(runtime_kernel_profile_test PRIVATE ${TG_RUNTIME_DIR}/kernel_profile.cpp)
target_link_libraries(runtime_kernel_profile_test PRIVATE runtime_fake_model)

runtime_gtest(runtime_e2e_test)
target_link_libraries(runtime_e2e_test PRIVATE nlohmann_json::nlohmann_json tg_driver)  # driver/process
target_compile_definitions(runtime_e2e_test PRIVATE
  TG_FAKE_MAIN_TEST="$<TARGET_FILE:runtime_fake_main_test>")
add_dependencies(runtime_e2e_test runtime_fake_main_test)
