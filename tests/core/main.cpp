// The test runner: doctest's own main(). The test cases live in the test_*.cpp files beside it.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

// In the sanitizer builds: an allocation larger than the machine returns nullptr, as it does
// without AddressSanitizer or ThreadSanitizer, so that the tests of the out-of-memory Error run
// there too.
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }
extern "C" const char* __tsan_default_options() { return "allocator_may_return_null=1"; }
