#!/bin/sh
# autograd:op_coverage — every differentiable op of autograd/ops.h, and every differentiable view
# method of axiom::Tensor (autograd/tensor.h), is called inside some check_grad(...) statement of
# tests/autograd/test_gradcheck_ops.cpp, which runs gradcheck and gradgradcheck on it. A new op
# added to ops.h without a check fails here, by name.
# Usage: op_coverage.sh SOURCE_DIR
set -u
cd "$1" || exit 1
# Not differentiable, or not an op of their own: comparisons and argmax (integer results), the
# inference-only attention step, activate (gelu, gelu_tanh or relu by name, each checked), flatten
# (reshape({-1})).
skip=" eq lt gt argmax attention_step activate flatten "
ops=$(grep -oE '^Tensor [a-z_]+\(' autograd/ops.h | sed 's/^Tensor //; s/($//' | sort -u)
views=$(sed -n '/differentiable views/,/For the engine/p' autograd/tensor.h | grep -oE 'Tensor [a-z_]+\(' | sed 's/^Tensor //; s/($//' | sort -u)
# The text of every check_grad(...) statement, one per line (a statement ends with ");").
checks=$(awk '/check_grad\(/ {on = 1} on {printf "%s ", $0} on && /\);[[:space:]]*$/ {print ""; on = 0}' tests/autograd/test_gradcheck_ops.cpp)
missing=0
count=0
for op in $ops $views; do
  case "$skip" in *" $op "*) continue ;; esac
  count=$((count + 1))
  if ! printf '%s\n' "$checks" | grep -qE "(^|[^a-z_])$op\("; then
    echo "op_coverage: $op (autograd/ops.h or tensor.h) is called in no check_grad(...) of tests/autograd/test_gradcheck_ops.cpp"
    missing=$((missing + 1))
  fi
done
echo "op_coverage: $count differentiable ops, $missing without a check"
[ "$count" -gt 40 ] && [ "$missing" -eq 0 ]
