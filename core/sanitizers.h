// Which sanitizer this translation unit is compiled with, said one way for gcc and clang: gcc
// defines __SANITIZE_ADDRESS__ and __SANITIZE_THREAD__, clang answers __has_feature(...).
//   AXIOM_ADDRESS_SANITIZER  AddressSanitizer (-fsanitize=address)
//   AXIOM_THREAD_SANITIZER   ThreadSanitizer (-fsanitize=thread)
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define AXIOM_ADDRESS_SANITIZER 1
#endif
#if defined(__SANITIZE_THREAD__)
#define AXIOM_THREAD_SANITIZER 1
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer) && !defined(AXIOM_ADDRESS_SANITIZER)
#define AXIOM_ADDRESS_SANITIZER 1
#endif
#if __has_feature(thread_sanitizer) && !defined(AXIOM_THREAD_SANITIZER)
#define AXIOM_THREAD_SANITIZER 1
#endif
#endif
