// SPDX-License-Identifier: Apache-2.0
#include "core/heap_reuse.hpp"

#include <mutex>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace sb {

void keep_freed_heap_for_reuse() {
#if defined(__GLIBC__)
  static std::once_flag once;
  std::call_once(once, [] { mallopt(M_TOP_PAD, 64 << 20); });
#endif
}

}  // namespace sb
