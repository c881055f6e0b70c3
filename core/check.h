// FEDPAR_CHECK: throws fedpar::Error carrying file:line and a streamed message.
// Used for programming and I/O faults; user input is validated with clear messages instead.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace fedpar {

// A fault the user can act on (bad flag, missing file). The CLI prints what() on one line.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A run that started and could not go on: a process missing at a deadline, every one dropped, a
// failed ring, a silent or vanished server. Not the user's input: the CLI exits kExitRunFailed.
class RunFailed : public Error {
 public:
  using Error::Error;
};
constexpr int kExitRunFailed = 5;
// A client process whose server ended the run before it completed (stopped, failed, or went on
// without this process): the server's reason was printed, and the server's exit says the rest.
constexpr int kExitEndedByServer = 6;

namespace detail {
// Collects the streamed message and throws from its destructor's caller via `raise()`.
class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* cond) {
    os_ << file << ":" << line << ": check failed: " << cond << ": ";
  }
  template <typename T>
  CheckFailure& operator<<(const T& v) {
    os_ << v;
    return *this;
  }
  [[noreturn]] void raise() const { throw Error(os_.str()); }

 private:
  std::ostringstream os_;
};
// Lets `FEDPAR_CHECK(c) << "msg";` throw at the end of the full expression.
struct Raiser {
  [[noreturn]] void operator&(const CheckFailure& f) const { f.raise(); }
};
}  // namespace detail

}  // namespace fedpar

#define FEDPAR_CHECK(cond) \
  if (cond) {              \
  } else                   \
    ::fedpar::detail::Raiser() & ::fedpar::detail::CheckFailure(__FILE__, __LINE__, #cond)
