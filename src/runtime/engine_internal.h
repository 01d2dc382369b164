// The runtime's side of the public types: the Impl behind each class of qwen35/engine.h, for the
// runtime itself, its tests and its benchmarks. Not part of the public API.
#pragma once

#include <memory>
#include <utility>

#include "qwen35/engine.h"

namespace qwen35 {

// Friend of the public classes (engine.h): reaches their Impl and builds them around one.
struct ImplAccess {
  static const EngineImpl& of(const Engine& e) { return *e.impl_; }
  static PrefixCache::Impl& of(PrefixCache& c) { return *c.impl_; }
  static const Snapshot::Impl& of(const Snapshot& s) { return *s.impl_; }
  static Session::Impl& of(Session& s) { return *s.impl_; }
  static PreparedChat::Impl& of(PreparedChat& p) { return *p.impl_; }
  static Generation::Impl& of(Generation& g) { return *g.impl_; }

  template <class T>
  static std::unique_ptr<T> make(std::unique_ptr<typename T::Impl> impl) {
    return std::unique_ptr<T>(new T(std::move(impl)));
  }
};

inline const EngineImpl& impl_of(const Engine& e) { return ImplAccess::of(e); }
inline PrefixCache::Impl& impl_of(PrefixCache& c) { return ImplAccess::of(c); }
inline const Snapshot::Impl& impl_of(const Snapshot& s) { return ImplAccess::of(s); }
inline Session::Impl& impl_of(Session& s) { return ImplAccess::of(s); }
inline PreparedChat::Impl& impl_of(PreparedChat& p) { return ImplAccess::of(p); }
inline Generation::Impl& impl_of(Generation& g) { return ImplAccess::of(g); }

}  // namespace qwen35
