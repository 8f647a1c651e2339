# Warnings are errors in project code only: dependencies come in through imported targets,
# whose include directories CMake marks as system headers.
add_library(fencelock_warnings INTERFACE)
target_compile_options(fencelock_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Werror
  -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Woverloaded-virtual
  -Wconversion -Wsign-conversion -Wimplicit-fallthrough
  # g++ 12 reports false -Wrestrict positives at -O3 for `"literal" + std::string&&` (GCC PR 105329).
  $<$<CXX_COMPILER_ID:GNU>:-Wno-restrict>)

# Asio with C++20 coroutines on g++ 12 needs no extra flag; Boost.Asio is header-only here.
add_library(fencelock_asio INTERFACE)
target_link_libraries(fencelock_asio INTERFACE Boost::headers Threads::Threads)
target_compile_definitions(fencelock_asio INTERFACE
  BOOST_ASIO_NO_DEPRECATED BOOST_ASIO_DISABLE_BOOST_COROUTINE BOOST_BEAST_USE_STD_STRING_VIEW)
