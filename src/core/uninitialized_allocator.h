// An allocator whose value-initialisation (resize, the size constructor) leaves elements of a
// trivial type uninitialised: for reservations written before they are read, where zeroing would
// touch, and so make resident, memory that may never be used.
#pragma once

#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace qwen35 {

template <class T>
struct UninitializedAllocator : std::allocator<T> {
  static_assert(std::is_trivially_default_constructible_v<T>);
  template <class U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  UninitializedAllocator() noexcept = default;
  template <class U>
  UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}

  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;  // default-, not value-initialised
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) noexcept(std::is_nothrow_constructible_v<U, Args...>) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

}  // namespace qwen35
