// Activation checks shared by every backend's tests (activation_test.cc for
// reference and oneDNN, cuda/activation_test.cc for CUDA).
#pragma once

#include <string>

#include "testutil.h"

namespace hub::testing {

inline Attrs alpha(float a) { return Attrs().set("alpha", a); }
inline Attrs clip(float lo, float hi) { return Attrs().set("min", lo).set("max", hi); }

// Every activation's gradient (PRelu's for x and its slope) against finite
// differences on `backend`, at points clear of each one's kinks.
inline void check_activation_gradients(const std::string& backend) {
  GradCheckOptions o;
  o.backend = backend;
  o.step = 1e-3;
  // Clear of the kinks at 0 and 6 by more than the step.
  Tensor x = make({2, 4}, {-2.5f, -0.7f, -0.1f, 0.2f, 0.9f, 3.3f, 6.5f, 8.0f});
  for (const char* op : {"Relu", "Relu6", "Elu", "Sigmoid", "Tanh"}) {
    INFO(op << " on " << backend);
    check_gradients(op, {x}, {}, o);
  }
  // Clear of HardSwish's kinks at +-3, HardSigmoid's at +-2.5 and the clip bounds.
  INFO(backend);
  Tensor z = make({3, 3}, {-3.7f, -2.2f, -0.7f, -0.1f, 0.2f, 0.9f, 2.8f, 3.3f, 6.5f});
  check_gradients("LeakyRelu", {z}, alpha(0.3f), o);
  check_gradients("LeakyRelu", {z}, alpha(-1.2f), o);
  check_gradients("Elu", {z}, alpha(0.4f), o);
  check_gradients("HardSwish", {z}, {}, o);
  check_gradients("HardSigmoid", {z}, {}, o);
  check_gradients("ClipByValue", {z}, clip(-1, 2), o);
  check_gradients("ClipByValue", {z}, Attrs().set("max", 0.5f), o);
  // PRelu: slope per last dim, per row and a scalar.
  check_gradients("PRelu", {z, make({3}, {0.1f, -0.4f, 1.3f})}, {}, o);
  check_gradients("PRelu", {z, make({3, 1}, {0.2f, 0.7f, -2})}, {}, o);
  check_gradients("PRelu", {z, make({}, {0.25f})}, {}, o);
}

}  // namespace hub::testing
