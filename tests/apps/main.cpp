#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

// fontconfig (under cairo, under giza's plots) keeps its configuration and font caches until the
// process ends, on purpose; LeakSanitizer would report them as leaks. Only those are ignored.
extern "C" const char* __lsan_default_suppressions() { return "leak:libfontconfig.so\n"; }
