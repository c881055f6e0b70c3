// A TCP relay on 127.0.0.1 for fault tests: it accepts connections and pipes each to a target port
// on 127.0.0.1; cut() ends every connection it carries at once, with a reset, as a link that
// dropped would, and the connections that come next are relayed as before.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

namespace fedpar::testing {

class TcpProxy {
 public:
  explicit TcpProxy(uint16_t target) : target_(target) {
    listen_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a = loopback(0);
    socklen_t len = sizeof a;
    if (listen_ < 0 || ::bind(listen_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::listen(listen_, 16) != 0 ||
        ::getsockname(listen_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      throw std::runtime_error("TcpProxy: cannot listen on 127.0.0.1");
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { loop(); });
  }
  ~TcpProxy() {
    stop_ = true;
    thread_.join();
    close_all();
    ::close(listen_);
  }
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  uint16_t port() const { return port_; }
  int accepted() const { return accepted_; }
  // Resets every connection relayed now, and for `refuse` after it every new one (a link down
  // for that long); returns once they are closed.
  void cut(std::chrono::milliseconds refuse = std::chrono::milliseconds(0)) {
    refuse_until_ = std::chrono::steady_clock::now() + refuse;
    cut_ = true;
    while (cut_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

 private:
  static sockaddr_in loopback(uint16_t port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    return a;
  }

  static bool write_all(int fd, const char* p, ssize_t n) {
    while (n > 0) {
      const ssize_t w = ::send(fd, p, size_t(n), MSG_NOSIGNAL);
      if (w <= 0) return false;
      p += w, n -= w;
    }
    return true;
  }

  static void reset(int fd) {
    const linger l{1, 0};  // close with RST, not FIN: the link is gone, not politely shut
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    ::close(fd);
  }

  void close_all() {
    for (const auto& [a, b] : pairs_) reset(a), reset(b);
    pairs_.clear();
  }

  void accept_one() {
    const int in = ::accept(listen_, nullptr, nullptr);
    if (in < 0) return;
    if (std::chrono::steady_clock::now() < refuse_until_.load()) return reset(in);
    const int out = ::socket(AF_INET, SOCK_STREAM, 0);
    const sockaddr_in a = loopback(target_);
    if (out < 0 || ::connect(out, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
      reset(in);
      if (out >= 0) ::close(out);
      return;
    }
    pairs_.emplace_back(in, out);
    ++accepted_;
  }

  // One thread relays everything: both ends are ZeroMQ peers that always read, so a blocking
  // write cannot stall for long.
  void loop() {
    std::array<char, 65536> buf;
    while (!stop_) {
      if (cut_) {
        close_all();
        cut_ = false;
      }
      std::vector<pollfd> fds{{listen_, POLLIN, 0}};
      for (const auto& [a, b] : pairs_)
        fds.push_back({a, POLLIN, 0}), fds.push_back({b, POLLIN, 0});
      if (::poll(fds.data(), fds.size(), 20) <= 0) continue;
      if (fds[0].revents & POLLIN) accept_one();
      for (size_t i = 0; i < (fds.size() - 1) / 2 && i < pairs_.size(); ++i) {
        const auto [a, b] = pairs_[i];
        bool open = true;
        for (const auto& [from, to, ev] :
             {std::tuple{a, b, fds[1 + 2 * i].revents}, std::tuple{b, a, fds[2 + 2 * i].revents}}) {
          if (!open || !(ev & (POLLIN | POLLHUP | POLLERR))) continue;
          const ssize_t n = ::recv(from, buf.data(), buf.size(), 0);
          open = n > 0 && write_all(to, buf.data(), n);
        }
        if (!open) {
          ::close(a), ::close(b);
          pairs_[i] = {-1, -1};
        }
      }
      std::erase(pairs_, std::pair{-1, -1});
    }
  }

  uint16_t target_, port_ = 0;
  int listen_ = -1;
  std::vector<std::pair<int, int>> pairs_;  // (accepted, to the target); owned by the thread
  std::atomic<bool> stop_{false}, cut_{false};
  std::atomic<std::chrono::steady_clock::time_point> refuse_until_{};
  std::atomic<int> accepted_{0};
  std::thread thread_;
};

}  // namespace fedpar::testing
