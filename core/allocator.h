// Model-sized buffers (a 4 MB gradient, its decoded copy, a received frame) are allocated and freed
// every round. glibc maps each one fresh above 128 KB and unmaps it on free, so every round pays
// a page fault per 4 KB touched; keep_freed_memory() has glibc serve them from its heap and keep
// what is freed for the next round instead. It changes no result, only where memory comes from.
#pragma once

namespace fedpar {

// Call once at the start of main(), before threads start.
void keep_freed_memory();

}  // namespace fedpar
