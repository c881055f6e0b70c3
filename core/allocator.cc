// keep_freed_memory; see allocator.h.
#include "core/allocator.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace fedpar {

void keep_freed_memory() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 32 << 20);   // glibc's largest: buffers up to 32 MB from the heap
  mallopt(M_TRIM_THRESHOLD, 512 << 20);  // and up to 512 MB of freed heap kept for reuse
#endif
}

}  // namespace fedpar
