// SPDX-License-Identifier: Apache-2.0
// Reference softmax + cross-entropy per row, numerically stable (row max subtracted).
// Leaves out threading and the mean over rows: the caller weights rows through dlosses.
#include <algorithm>
#include <cmath>

#include "core/check.hpp"
#include "kernels/kernels.hpp"

namespace sb::kernels::reference {

// loss = -log softmax(logits)[target] = log(sum exp(logits - max)) - (logits[target] - max),
// which stays finite where probs[target] underflows to zero. The row sum runs in double so
// that reference<float> stays a ground truth at GPT-2's V = 50304: a float running sum near 1
// drops every term below half its ulp (exp(-17) and smaller), 1e-4 relative in all.
template <class T>
SB_DECLARE_CROSSENTROPY_FORWARD(T, T) {
  for (i64 r = 0; r < BT; ++r) {
    const std::int32_t target = targets[r];
    SB_CHECK(target >= 0 && target < V, "crossentropy: target {} at row {} is outside [0, {})",
             target, r, V);
    const T* x = logits + r * V;
    T* p = probs + r * V;
    T max_logit = x[0];
    for (i64 i = 1; i < V; ++i) max_logit = std::max(max_logit, x[i]);
    double sum = 0;
    for (i64 i = 0; i < V; ++i) {
      p[i] = std::exp(x[i] - max_logit);
      sum += p[i];
    }
    for (i64 i = 0; i < V; ++i) p[i] = static_cast<T>(p[i] / sum);
    losses[r] = static_cast<T>(std::log(sum) - (x[target] - max_logit));
  }
}

template <class T>
SB_DECLARE_CROSSENTROPY_BACKWARD(T, T) {
  for (i64 r = 0; r < BT; ++r) {
    const T* p = probs + r * V;
    T* dx = dlogits + r * V;
    const T d = dlosses[r];
    for (i64 i = 0; i < V; ++i) dx[i] += p[i] * d;
    dx[targets[r]] -= d;
  }
}

template SB_DECLARE_CROSSENTROPY_FORWARD(float, float);
template SB_DECLARE_CROSSENTROPY_FORWARD(double, double);
template SB_DECLARE_CROSSENTROPY_BACKWARD(float, float);
template SB_DECLARE_CROSSENTROPY_BACKWARD(double, double);

}  // namespace sb::kernels::reference
