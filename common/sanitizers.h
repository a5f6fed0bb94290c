#ifndef TESSERA_COMMON_SANITIZERS_H_
#define TESSERA_COMMON_SANITIZERS_H_

// Whether this build runs under AddressSanitizer or ThreadSanitizer
// (scripts/test.sh builds build-asan/ and build-tsan/): GCC defines
// __SANITIZE_*__, clang answers __has_feature.

#if defined(__has_feature)
#define TESSERA_HAS_FEATURE(x) __has_feature(x)
#else
#define TESSERA_HAS_FEATURE(x) 0
#endif

namespace tessera {

inline constexpr bool kAddressSanitizer =
#if defined(__SANITIZE_ADDRESS__) || TESSERA_HAS_FEATURE(address_sanitizer)
    true;
#else
    false;
#endif

inline constexpr bool kThreadSanitizer =
#if defined(__SANITIZE_THREAD__) || TESSERA_HAS_FEATURE(thread_sanitizer)
    true;
#else
    false;
#endif

}  // namespace tessera

#undef TESSERA_HAS_FEATURE

#endif  // TESSERA_COMMON_SANITIZERS_H_
