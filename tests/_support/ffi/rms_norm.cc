// A small XLA typed-FFI kernel for funcgrad's FFI tests: RMS normalisation over the last axis,
// as in JAX's FFI tutorial (written for these tests). Built against the headers of
// funcgrad.ffi.include_dir() by tests/surface/test_ffi.py.
//
//   rms_norm(x; eps)            y = x / sqrt(mean(x^2, -1) + eps)
//   rms_norm_fwd(x; eps)        (y, r) with r = 1 / sqrt(mean(x^2, -1) + eps) per row
//   rms_norm_bwd(r, x, ct_y)    ct_x = r * ct_y - x * r^3 * mean(x * ct_y, -1)
//   scale_rows(x, s)            y = x * s[..., None] (batched operands: leading axes shared)
//   LegacyDouble                y = 2 * x (the legacy custom-call API, api_version 3)

#include <cmath>
#include <cstdint>
#include <utility>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

// The number of rows and the row length of a buffer (rows: every axis but the last).
template <ffi::DataType T>
std::pair<int64_t, int64_t> RowsAndLength(const ffi::Buffer<T>& buffer) {
  auto dims = buffer.dimensions();
  if (dims.size() == 0) return {1, 1};
  int64_t n = dims.back();
  int64_t total = 1;
  for (auto d : dims) total *= d;
  return {n == 0 ? 0 : total / n, n};
}

float InverseRms(float eps, int64_t n, const float* x) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += x[i] * x[i];
  return 1.0f / std::sqrt(sum / static_cast<float>(n) + eps);
}

ffi::Error RmsNormImpl(float eps, ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> y) {
  // The caller declares the result's shape (ffi_call's result_shape_dtypes): check it.
  auto xd = x.dimensions();
  auto yd = y->dimensions();
  bool same = xd.size() == yd.size();
  for (size_t i = 0; same && i < xd.size(); ++i) same = xd[i] == yd[i];
  if (!same) return ffi::Error::InvalidArgument("rms_norm: the result must have the shape of x");
  auto [rows, n] = RowsAndLength(x);
  if (n == 0) return ffi::Error::Success();
  const float* in = x.typed_data();
  float* out = y->typed_data();
  for (int64_t r = 0; r < rows; ++r) {
    float inv = InverseRms(eps, n, in + r * n);
    for (int64_t i = 0; i < n; ++i) out[r * n + i] = in[r * n + i] * inv;
  }
  return ffi::Error::Success();
}

ffi::Error RmsNormFwdImpl(float eps, ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> y,
                          ffi::ResultBuffer<ffi::F32> res) {
  auto [rows, n] = RowsAndLength(x);
  if (n == 0) return ffi::Error::Success();
  const float* in = x.typed_data();
  for (int64_t r = 0; r < rows; ++r) {
    float inv = InverseRms(eps, n, in + r * n);
    res->typed_data()[r] = inv;
    for (int64_t i = 0; i < n; ++i) y->typed_data()[r * n + i] = in[r * n + i] * inv;
  }
  return ffi::Error::Success();
}

ffi::Error RmsNormBwdImpl(ffi::Buffer<ffi::F32> res, ffi::Buffer<ffi::F32> x, ffi::Buffer<ffi::F32> ct_y,
                          ffi::ResultBuffer<ffi::F32> ct_x) {
  auto [rows, n] = RowsAndLength(x);
  if (n == 0) return ffi::Error::Success();
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x.typed_data() + r * n;
    const float* cr = ct_y.typed_data() + r * n;
    float inv = res.typed_data()[r];
    float dot = 0.0f;
    for (int64_t i = 0; i < n; ++i) dot += xr[i] * cr[i];
    float k = inv * inv * inv * dot / static_cast<float>(n);
    for (int64_t i = 0; i < n; ++i) ct_x->typed_data()[r * n + i] = inv * cr[i] - k * xr[i];
  }
  return ffi::Error::Success();
}

// Checks its operands' shapes (an error the caller sees): s has x's shape without the last axis.
ffi::Error ScaleRowsImpl(ffi::Buffer<ffi::F64> x, ffi::Buffer<ffi::F64> s, ffi::ResultBuffer<ffi::F64> y) {
  auto [rows, n] = RowsAndLength(x);
  if (s.element_count() != static_cast<size_t>(rows)) {
    return ffi::Error::InvalidArgument("scale_rows: s must have one element per row of x");
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; ++i) y->typed_data()[r * n + i] = x.typed_data()[r * n + i] * s.typed_data()[r];
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(RmsNorm, RmsNormImpl,
                              ffi::Ffi::Bind().Attr<float>("eps").Arg<ffi::Buffer<ffi::F32>>().Ret<ffi::Buffer<ffi::F32>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(RmsNormFwd, RmsNormFwdImpl,
                              ffi::Ffi::Bind()
                                  .Attr<float>("eps")
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(RmsNormBwd, RmsNormBwdImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(ScaleRows, ScaleRowsImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::F64>>()
                                  .Arg<ffi::Buffer<ffi::F64>>()
                                  .Ret<ffi::Buffer<ffi::F64>>());

// A legacy custom call (before the typed FFI; custom_call_api_version=3, "status returning
// unified"): out = in * 2 over the number of elements given as the opaque backend config string.
struct XlaCustomCallStatus_;
extern "C" void LegacyDouble(void* out, const void** in, const char* opaque, size_t opaque_len,
                             XlaCustomCallStatus_* status) {
  int64_t n = 0;
  for (size_t i = 0; i < opaque_len; ++i) n = n * 10 + (opaque[i] - '0');
  const double* x = static_cast<const double*>(in[0]);
  double* y = static_cast<double*>(out);
  for (int64_t i = 0; i < n; ++i) y[i] = 2.0 * x[i];
}
