// An in-memory ring for the ring all-reduce tests: one queue of tagged messages per directed edge,
// and a link that refuses a message out of step and gives up after its deadline.
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "core/check.h"
#include "transport/ring_allreduce.h"

namespace fedpar::testing {

// One directed edge of the ring: a queue of tagged messages.
struct Edge {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::pair<uint64_t, std::vector<float>>> q;
};

class MemoryLink final : public RingLink {
 public:
  MemoryLink(Edge& out, Edge& in, std::chrono::milliseconds deadline)
      : out_(out), in_(in), deadline_(deadline) {}
  void send_next(std::span<const float> chunk, uint64_t tag) override {
    std::lock_guard lock(out_.mu);
    out_.q.emplace_back(tag, std::vector<float>(chunk.begin(), chunk.end()));
    out_.cv.notify_one();
  }
  void recv_prev(std::span<float> into, uint64_t tag) override {
    std::unique_lock lock(in_.mu);
    if (!in_.cv.wait_for(lock, deadline_, [&] { return !in_.q.empty(); }))
      throw Error("ring: the previous worker sent nothing within the deadline");
    auto [t, v] = std::move(in_.q.front());
    in_.q.pop_front();
    if (t != tag || v.size() != into.size())
      throw Error(fmt::format("ring: got message {} of {} floats, expected {} of {}", t, v.size(),
                              tag, into.size()));
    std::copy(v.begin(), v.end(), into.begin());
  }

 private:
  Edge &out_, &in_;
  std::chrono::milliseconds deadline_;
};

// Runs fn(rank, link) for ranks 0..n-1 on n threads joined in a ring of MemoryLinks.
inline void on_memory_ring(int n, const std::function<void(int, RingLink&)>& fn) {
  std::vector<Edge> edges(static_cast<size_t>(n));  // edge r: from rank r to rank r + 1
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      MemoryLink link(edges[size_t(r)], edges[size_t((r + n - 1) % n)],
                      std::chrono::milliseconds(5000));
      fn(r, link);
    });
  for (auto& t : threads) t.join();
}

}  // namespace fedpar::testing
