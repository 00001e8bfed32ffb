// SPDX-License-Identifier: Apache-2.0
// The back-end-independent parts of communicator.hpp: data types and Request's lifetime rules.
#include "parallel/communicator.hpp"

#include "core/check.hpp"

namespace sb::parallel {

std::size_t size_of(DataType type) {
  switch (type) {
    case DataType::f32: return 4;
    case DataType::f64: return 8;
    case DataType::i32: return 4;
    case DataType::i64: return 8;
    case DataType::u8: return 1;
    case DataType::bf16: return 2;
    case DataType::f16: return 2;
  }
  SB_CHECK(false, "unknown DataType {}", static_cast<int>(type));
}

std::string_view to_string(DataType type) {
  switch (type) {
    case DataType::f32: return "f32";
    case DataType::f64: return "f64";
    case DataType::i32: return "i32";
    case DataType::i64: return "i64";
    case DataType::u8: return "u8";
    case DataType::bf16: return "bf16";
    case DataType::f16: return "f16";
  }
  return "unknown";
}

// A request whose wait throws (a rank failed, a signal arrived) is abandoned, not retried: the
// job is going down and its buffers must not be waited on again.
Request& Request::operator=(Request&& other) noexcept {
  if (this != &other) {
    if (impl_) {
      try {
        impl_->wait();
      } catch (...) {
      }
    }
    impl_ = std::move(other.impl_);
  }
  return *this;
}

Request::~Request() {
  if (!impl_) return;
  try {
    impl_->wait();
  } catch (...) {  // a destructor must not throw; the failure was or will be seen by a wait
  }
}

bool Request::test() {
  if (!impl_) return true;
  bool complete = false;
  try {
    complete = impl_->test();
  } catch (...) {
    impl_.reset();
    throw;
  }
  if (complete) impl_.reset();
  return complete;
}

void Request::wait() {
  if (!impl_) return;
  std::unique_ptr<Impl> impl = std::move(impl_);
  impl->wait();
}

void wait_all(std::span<Request> requests) {
  for (Request& request : requests) request.wait();
}

}  // namespace sb::parallel
