// OneDnnConv; see onednn_conv.h.
#include "core/onednn_conv.h"

#include <fmt/format.h>

#include <oneapi/dnnl/dnnl.hpp>

#include "core/check.h"

namespace fedpar {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

// The primitives of one convolution shape and the buffers they need in oneDNN's layouts (a named
// type, not an anonymous one: it is a member's type in OneDnnConv::Impl).
struct OneDnnPlan {
  memory::desc user_x, user_w, user_b, user_y;
  dnnl::convolution_forward::primitive_desc fwd_pd;
  dnnl::convolution_backward_data::primitive_desc bwd_data_pd;
  dnnl::convolution_backward_weights::primitive_desc bwd_weights_pd;
  dnnl::convolution_forward fwd;
  dnnl::convolution_backward_data bwd_data;
  dnnl::convolution_backward_weights bwd_weights;
  // Reordered copies (allocated on first use), keyed by role.
  std::map<int, memory> staged;
  memory dweights_user, dbias_user;  // gradients in fedpar's layouts before they are added
};

struct OneDnnConv::Impl {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
  std::map<ConvShape, OneDnnPlan> plans;
  std::string impl_name;

  OneDnnPlan& plan(const ConvShape& s) {
    auto it = plans.find(s);
    if (it != plans.end()) return it->second;
    const memory::dims x_dims = {s.n, s.c, s.h, s.w}, y_dims = {s.n, s.oc, s.out_h(), s.out_w()};
    const memory::dims w_dims = {s.oc, s.c, s.k, s.k}, b_dims = {s.oc};
    const memory::dims strides = {1, 1}, pad = {s.pad(), s.pad()};
    OneDnnPlan p;
    p.user_x = memory::desc(x_dims, dt::f32, tag::nhwc);
    p.user_y = memory::desc(y_dims, dt::f32, tag::nhwc);
    p.user_w = memory::desc(w_dims, dt::f32, tag::ohwi);
    p.user_b = memory::desc(b_dims, dt::f32, tag::a);
    // `any` lets oneDNN choose its blocked layouts: with NHWC forced it falls back to reference
    // loops that are two orders of magnitude slower.
    const memory::desc any_x(x_dims, dt::f32, tag::any), any_y(y_dims, dt::f32, tag::any),
        any_w(w_dims, dt::f32, tag::any);
    const auto algo = dnnl::algorithm::convolution_direct;
    p.fwd_pd = dnnl::convolution_forward::primitive_desc(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, algo, any_x, any_w,
                                        p.user_b, any_y, strides, pad, pad),
        eng);
    p.bwd_data_pd = dnnl::convolution_backward_data::primitive_desc(
        dnnl::convolution_backward_data::desc(algo, any_x, any_w, any_y, strides, pad, pad), eng,
        p.fwd_pd);
    p.bwd_weights_pd = dnnl::convolution_backward_weights::primitive_desc(
        dnnl::convolution_backward_weights::desc(algo, any_x, any_w, p.user_b, any_y, strides, pad,
                                                 pad),
        eng, p.fwd_pd);
    p.fwd = dnnl::convolution_forward(p.fwd_pd);
    p.bwd_data = dnnl::convolution_backward_data(p.bwd_data_pd);
    p.bwd_weights = dnnl::convolution_backward_weights(p.bwd_weights_pd);
    p.dweights_user = memory(p.user_w, eng);
    p.dbias_user = memory(p.user_b, eng);
    impl_name = p.fwd_pd.impl_info_str();
    return plans.emplace(s, std::move(p)).first->second;
  }

  // `user` data as `want`: the user's buffer itself when the layouts agree, else a reordered copy
  // kept in plan.staged[role].
  memory in(OneDnnPlan& p, int role, const memory::desc& want, const memory::desc& user,
            const float* data) {
    memory user_mem(user, eng, const_cast<float*>(data));
    if (want == user) return user_mem;
    auto it = p.staged.find(role);
    if (it == p.staged.end()) it = p.staged.emplace(role, memory(want, eng)).first;
    dnnl::reorder(user_mem, it->second).execute(strm, user_mem, it->second);
    return it->second;
  }
  // A buffer in layout `have` for a result that must end up in `user` at `data`.
  memory out(OneDnnPlan& p, int role, const memory::desc& have, const memory::desc& user,
             float* data) {
    if (have == user) return memory(user, eng, data);
    auto it = p.staged.find(role);
    if (it == p.staged.end()) it = p.staged.emplace(role, memory(have, eng)).first;
    return it->second;
  }
  void finish(const memory& result, const memory::desc& user, float* data) {
    if (result.get_desc() == user && result.get_data_handle() == data) return;
    memory user_mem(user, eng, data);
    dnnl::reorder(result, user_mem).execute(strm, const_cast<memory&>(result), user_mem);
  }
};

enum Role { kFwdX, kFwdW, kFwdY, kBwX, kBwDy, kBwDw, kBdDy, kBdW, kBdDx };

OneDnnConv::OneDnnConv() : impl_(std::make_unique<Impl>()) {}
OneDnnConv::~OneDnnConv() = default;

void OneDnnConv::forward(const ConvShape& s, const float* x, const float* w, const float* b,
                         float* y) {
  Impl& m = *impl_;
  OneDnnPlan& p = m.plan(s);
  memory mx = m.in(p, kFwdX, p.fwd_pd.src_desc(), p.user_x, x);
  memory mw = m.in(p, kFwdW, p.fwd_pd.weights_desc(), p.user_w, w);
  memory my = m.out(p, kFwdY, p.fwd_pd.dst_desc(), p.user_y, y);
  memory mb(p.user_b, m.eng, const_cast<float*>(b));
  p.fwd.execute(
      m.strm,
      {{DNNL_ARG_SRC, mx}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_BIAS, mb}, {DNNL_ARG_DST, my}});
  m.finish(my, p.user_y, y);
  m.strm.wait();
}

void OneDnnConv::backward(const ConvShape& s, const float* x, const float* w, const float* dy,
                          float* dx, float* dw, float* db) {
  Impl& m = *impl_;
  OneDnnPlan& p = m.plan(s);
  const auto& pw = p.bwd_weights_pd;
  memory mx = m.in(p, kBwX, pw.src_desc(), p.user_x, x);
  memory mdy = m.in(p, kBwDy, pw.diff_dst_desc(), p.user_y, dy);
  memory mdw = pw.diff_weights_desc() == p.user_w
                   ? p.dweights_user
                   : m.out(p, kBwDw, pw.diff_weights_desc(), p.user_w, nullptr);
  p.bwd_weights.execute(m.strm, {{DNNL_ARG_SRC, mx},
                                 {DNNL_ARG_DIFF_DST, mdy},
                                 {DNNL_ARG_DIFF_WEIGHTS, mdw},
                                 {DNNL_ARG_DIFF_BIAS, p.dbias_user}});
  if (mdw.get_data_handle() != p.dweights_user.get_data_handle())
    dnnl::reorder(mdw, p.dweights_user).execute(m.strm, mdw, p.dweights_user);
  if (dx) {
    const auto& pd = p.bwd_data_pd;
    memory ddy = m.in(p, kBdDy, pd.diff_dst_desc(), p.user_y, dy);
    memory dwt = m.in(p, kBdW, pd.weights_desc(), p.user_w, w);
    memory ddx = m.out(p, kBdDx, pd.diff_src_desc(), p.user_x, dx);
    p.bwd_data.execute(
        m.strm, {{DNNL_ARG_DIFF_DST, ddy}, {DNNL_ARG_WEIGHTS, dwt}, {DNNL_ARG_DIFF_SRC, ddx}});
    m.finish(ddx, p.user_x, dx);
  }
  m.strm.wait();
  // oneDNN overwrites its gradients; fedpar's contract adds them (micro-batch accumulation).
  const auto* gw = static_cast<const float*>(p.dweights_user.get_data_handle());
  const auto* gb = static_cast<const float*>(p.dbias_user.get_data_handle());
  const size_t nw = size_t(s.oc) * s.k * s.k * s.c;
  for (size_t i = 0; i < nw; ++i) dw[i] += gw[i];
  for (int i = 0; i < s.oc; ++i) db[i] += gb[i];
}

std::string OneDnnConv::describe() const {
  const dnnl_version_t* v = dnnl_version();
  std::string out = fmt::format("oneDNN {}.{}.{}", v->major, v->minor, v->patch);
  if (!impl_->impl_name.empty()) out += " (" + impl_->impl_name + ")";
  return out;
}

}  // namespace fedpar
