// The test runner: doctest's own main(). The test cases live in the test_*.cpp files beside it.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
