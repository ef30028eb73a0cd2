// AoT-ADMM's element-wise state update (aot_lib/models/fused.py) as two CPU kernels, one loop over the tokens each.
//
// Why hand-written: every step of the update is a short chain per token (a row of d features) with two row
// reductions in it (the RMS of P, then of W_raw). A row is a few hundred bytes, so it can stay in the L1 cache
// from its first read to its last write: each full-size tensor is read or written once. torch.compile's C++
// backend splits the chain at each reduction into separate loops over the whole tensor (13 passes over memory
// forward instead of 7), and folds sums over tokens in as further loops; these two kernels do neither.
//
// Forward, per token (a, b, c the branch weights, tau per feature, r = 1/sqrt(mean(x^2) + eps)):
//   P = aZ + bA + c(V - W);  Z+ = P r1;  U = Z+ + W;  W_raw = min(U, tau);  V+ = U - W_raw;  W+ = W_raw r2
// Backward, per token (the formulas of fused.py's module docstring), with the sums over tokens of
// dtau = sum(dW_raw - dU) and of <dP, Z>, <dP, A>, <dP, P> accumulated in double per chunk of tokens.
#include <torch/extension.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace {

template <typename T>
inline T inv_rms(T sum_squares, int64_t d, T eps) {
  return T(1) / std::sqrt(sum_squares / T(d) + eps);
}

template <typename T>
void forward_rows(const T* z, const T* attn, const T* v, const T* w, const T* tau, T a, T b, T c, T eps,
                  int64_t rows, int64_t d, T* z1, T* v1, T* w1, T* r1, T* r2) {
  at::parallel_for(0, rows, 64, [=](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      // one token's row: restrict-qualified so that the compiler vectorizes with contiguous loads and stores
      const T* __restrict zr = z + i * d;
      const T* __restrict ar = attn + i * d;
      const T* __restrict vr = v + i * d;
      const T* __restrict wr = w + i * d;
      const T* __restrict tr = tau;
      T* __restrict z1r = z1 + i * d;
      T* __restrict v1r = v1 + i * d;
      T* __restrict w1r = w1 + i * d;
      T ss = 0;
#pragma omp simd reduction(+ : ss)
      for (int64_t k = 0; k < d; ++k) {
        const T p = a * zr[k] + b * ar[k] + c * (vr[k] - wr[k]);
        z1r[k] = p;
        ss += p * p;
      }
      const T s1 = inv_rms(ss, d, eps);
      T ss2 = 0;
#pragma omp simd reduction(+ : ss2)
      for (int64_t k = 0; k < d; ++k) {
        const T zp = z1r[k] * s1;
        const T u = zp + wr[k];
        const T wraw = (u < tr[k] || u != u) ? u : tr[k];  // min(U, tau), NaN kept as torch.minimum keeps it
        z1r[k] = zp;
        v1r[k] = u - wraw;
        w1r[k] = wraw;
        ss2 += wraw * wraw;
      }
      const T s2 = inv_rms(ss2, d, eps);
#pragma omp simd
      for (int64_t k = 0; k < d; ++k) w1r[k] *= s2;
      r1[i] = s1;
      r2[i] = s2;
    }
  });
}

// One token's backward (row i), its sums over features added to dtau's partial row and to the three inner
// products. HAS_ZW: Z+ and W+ have gradients (every layer but the last, where only V+ is used).
template <typename T, bool HAS_ZW>
inline void backward_token(int64_t i, int64_t d, const T* z, const T* attn, const T* z1, const T* v1, const T* w1,
                           const T* r1, const T* r2, const T* gz1, const T* gv1, const T* gw1, T a, T b, T c,
                           T* gz, T* gattn, T* gv, T* gw, double* __restrict tau_acc, double& dot_a, double& dot_b,
                           double& dot_p) {
  const int64_t o = i * d;
  const T* __restrict zr = z + o;
  const T* __restrict ar = attn + o;
  const T* __restrict z1r = z1 + o;
  const T* __restrict v1r = v1 + o;
  const T* __restrict w1r = w1 + o;
  const T* __restrict gz1r = HAS_ZW ? gz1 + o : nullptr;
  const T* __restrict gv1r = gv1 + o;
  const T* __restrict gw1r = HAS_ZW ? gw1 + o : nullptr;
  T* __restrict gzr = gz + o;
  T* __restrict gar = gattn + o;
  T* __restrict gvr = gv + o;
  T* __restrict gwr = gw + o;
  const T rz = r1[i], rw = r2[i];
  T mw = 0;  // mean(dW+ W+): the RMS backward of W+ = rms(W_raw)
  if (HAS_ZW) {
#pragma omp simd reduction(+ : mw)
    for (int64_t k = 0; k < d; ++k) mw += gw1r[k] * w1r[k];
    mw /= T(d);
  }
  // dU = m dV+ + (1 - m) dW_raw with m = [V+ > 0], dZ+ in all = dZ+ + dU; gw holds dU for now
  T mz = 0;  // mean(dZ+ in all times Z+): the RMS backward of Z+ = rms(P)
#pragma omp simd reduction(+ : mz)
  for (int64_t k = 0; k < d; ++k) {
    const T gwraw = HAS_ZW ? rw * (gw1r[k] - w1r[k] * mw) : T(0);
    // as arithmetic on the 0/1 mask, not a select: with dW+ = 0 (the last layer) the compiler turned the select
    // into a conditional update of dtau, a branch that kept the loop from vectorizing (twice the time)
    const T m = v1r[k] > T(0) ? T(1) : (v1r[k] == v1r[k] ? T(0) : v1r[k]);  // NaN V+: NaN, as eager
    const T gu = m * gv1r[k] + (T(1) - m) * gwraw;  // exact for finite values: one term is 0, the other x 1
    tau_acc[k] += double(gwraw - gu);
    gwr[k] = gu;
    mz += ((HAS_ZW ? gz1r[k] : T(0)) + gu) * z1r[k];
  }
  mz /= T(d);
  T da = 0, db = 0, dpp = 0;
#pragma omp simd reduction(+ : da, db, dpp)
  for (int64_t k = 0; k < d; ++k) {
    const T gu = gwr[k];
    const T gp = rz * ((HAS_ZW ? gz1r[k] : T(0)) + gu - z1r[k] * mz);
    gzr[k] = a * gp;
    gar[k] = b * gp;
    gvr[k] = c * gp;
    gwr[k] = gu - c * gp;
    da += gp * zr[k];
    db += gp * ar[k];
    dpp += gp * z1r[k];
  }
  dot_a += double(da);
  dot_b += double(db);
  dot_p += double(dpp) / double(rz);  // <dP, P> with P = Z+ / r1
}

template <typename T, bool HAS_ZW>
void backward_rows(const T* z, const T* attn, const T* z1, const T* v1, const T* w1, const T* r1, const T* r2,
                   const T* gz1, const T* gv1, const T* gw1, T a, T b, T c, int64_t rows, int64_t d,
                   T* gz, T* gattn, T* gv, T* gw, int64_t chunks, double* tau_partial, double* dots_partial) {
  // The sums over tokens go to one partial row per chunk of tokens (fixed ranges, not per thread: the thread
  // count of an OpenMP runtime need not be torch's), added up after the loop.
  at::parallel_for(0, chunks, 1, [=](int64_t chunk_begin, int64_t chunk_end) {
    for (int64_t chunk = chunk_begin; chunk < chunk_end; ++chunk) {
      double dot_a = 0, dot_b = 0, dot_p = 0;
      for (int64_t i = rows * chunk / chunks; i < rows * (chunk + 1) / chunks; ++i)
        backward_token<T, HAS_ZW>(i, d, z, attn, z1, v1, w1, r1, r2, gz1, gv1, gw1, a, b, c, gz, gattn, gv, gw,
                                  tau_partial + chunk * d, dot_a, dot_b, dot_p);
      dots_partial[chunk * 3] = dot_a;
      dots_partial[chunk * 3 + 1] = dot_b;
      dots_partial[chunk * 3 + 2] = dot_p;
    }
  });
}

void check(const torch::Tensor& t, const torch::Tensor& like, const char* name) {
  TORCH_CHECK(t.device().is_cpu() && t.is_contiguous() && t.scalar_type() == like.scalar_type() &&
                  t.sizes() == like.sizes(),
              "admm_cpu: ", name, " must be a contiguous CPU tensor of the state's dtype and shape");
}

// Z itself: a contiguous float32/float64 CPU tensor with at least one feature.
void check_state(const torch::Tensor& z) {
  TORCH_CHECK(z.device().is_cpu() && z.is_contiguous() && z.dim() >= 1 && z.size(-1) > 0 &&
                  (z.scalar_type() == torch::kFloat || z.scalar_type() == torch::kDouble),
              "admm_cpu: Z must be a contiguous float32 or float64 CPU tensor with at least one feature");
}

// One value per token (r1, r2): contiguous, of the state's dtype.
void check_rows(const torch::Tensor& t, const torch::Tensor& z, int64_t rows, const char* name) {
  TORCH_CHECK(t.device().is_cpu() && t.is_contiguous() && t.scalar_type() == z.scalar_type() && t.numel() == rows,
              "admm_cpu: ", name, " must hold one value per token, contiguous, of the state's dtype");
}

}  // namespace

// (Z+, V+, W+, r1, r2) of one layer; coef = (a, b, c) and tau (d,) as CPU tensors of the state's dtype.
std::vector<torch::Tensor> admm_forward(torch::Tensor z, torch::Tensor attn, torch::Tensor v, torch::Tensor w,
                                        torch::Tensor coef, torch::Tensor tau, double eps) {
  check_state(z);
  check(attn, z, "A");
  check(v, z, "V");
  check(w, z, "W");
  const int64_t d = z.size(-1), rows = z.numel() / d;
  TORCH_CHECK(tau.device().is_cpu() && tau.numel() == d && tau.is_contiguous() && tau.scalar_type() == z.scalar_type(),
              "admm_cpu: tau must be a contiguous CPU tensor of the state's dtype, one value per feature");
  auto z1 = torch::empty_like(z), v1 = torch::empty_like(z), w1 = torch::empty_like(z);
  auto row_shape = z.sizes().vec();
  row_shape.back() = 1;
  auto r1 = torch::empty(row_shape, z.options()), r2 = torch::empty(row_shape, z.options());
  auto cf = coef.to(torch::kCPU, torch::kDouble);
  AT_DISPATCH_FLOATING_TYPES(z.scalar_type(), "admm_forward", [&] {
    forward_rows<scalar_t>(z.data_ptr<scalar_t>(), attn.data_ptr<scalar_t>(), v.data_ptr<scalar_t>(),
                           w.data_ptr<scalar_t>(), tau.data_ptr<scalar_t>(), scalar_t(cf[0].item<double>()),
                           scalar_t(cf[1].item<double>()), scalar_t(cf[2].item<double>()), scalar_t(eps), rows, d,
                           z1.data_ptr<scalar_t>(), v1.data_ptr<scalar_t>(), w1.data_ptr<scalar_t>(),
                           r1.data_ptr<scalar_t>(), r2.data_ptr<scalar_t>());
  });
  return {z1, v1, w1, r1, r2};
}

// (dZ, dA, dV, dW, dtau (d,), (<dP, Z>, <dP, A>, <dP, P>) in double); gz1 and gw1 undefined for the last layer.
std::vector<torch::Tensor> admm_backward(torch::Tensor z, torch::Tensor attn, torch::Tensor z1, torch::Tensor v1,
                                         torch::Tensor w1, torch::Tensor r1, torch::Tensor r2, torch::Tensor coef,
                                         c10::optional<torch::Tensor> gz1, torch::Tensor gv1,
                                         c10::optional<torch::Tensor> gw1) {
  const bool has_zw = gz1.has_value() && gw1.has_value();
  TORCH_CHECK(has_zw || (!gz1.has_value() && !gw1.has_value()), "admm_cpu: dZ+ and dW+ come together or not at all");
  check_state(z);
  for (auto* t : {&attn, &z1, &v1, &w1, &gv1}) check(*t, z, "an input");
  if (has_zw) {
    check(*gz1, z, "dZ+");
    check(*gw1, z, "dW+");
  }
  const int64_t d = z.size(-1), rows = z.numel() / d;
  check_rows(r1, z, rows, "r1");
  check_rows(r2, z, rows, "r2");
  // at least 64 tokens a chunk, at most one chunk per thread
  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(at::get_num_threads(), (rows + 63) / 64));
  auto gz = torch::empty_like(z), gattn = torch::empty_like(z), gv = torch::empty_like(z), gw = torch::empty_like(z);
  auto tau_partial = torch::zeros({chunks, d}, z.options().dtype(torch::kDouble));
  auto dots_partial = torch::zeros({chunks, 3}, z.options().dtype(torch::kDouble));
  auto cf = coef.to(torch::kCPU, torch::kDouble);
  AT_DISPATCH_FLOATING_TYPES(z.scalar_type(), "admm_backward", [&] {
    const scalar_t a = cf[0].item<double>(), b = cf[1].item<double>(), c = cf[2].item<double>();
    auto run = [&](auto has) {
      constexpr bool HAS = decltype(has)::value;
      backward_rows<scalar_t, HAS>(
          z.data_ptr<scalar_t>(), attn.data_ptr<scalar_t>(), z1.data_ptr<scalar_t>(), v1.data_ptr<scalar_t>(),
          w1.data_ptr<scalar_t>(), r1.data_ptr<scalar_t>(), r2.data_ptr<scalar_t>(),
          HAS ? gz1->data_ptr<scalar_t>() : nullptr, gv1.data_ptr<scalar_t>(),
          HAS ? gw1->data_ptr<scalar_t>() : nullptr, a, b, c, rows, d, gz.data_ptr<scalar_t>(),
          gattn.data_ptr<scalar_t>(), gv.data_ptr<scalar_t>(), gw.data_ptr<scalar_t>(), chunks,
          tau_partial.data_ptr<double>(), dots_partial.data_ptr<double>());
    };
    if (has_zw) run(std::true_type{}); else run(std::false_type{});
  });
  return {gz, gattn, gv, gw, tau_partial.sum(0).to(z.scalar_type()), dots_partial.sum(0)};
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  // the GIL released while a kernel runs: nothing in them touches Python objects
  m.def("forward", &admm_forward, "AoT-ADMM state update, forward (CPU)",
        py::call_guard<py::gil_scoped_release>());
  m.def("backward", &admm_backward, "AoT-ADMM state update, backward (CPU)",
        py::call_guard<py::gil_scoped_release>());
}
