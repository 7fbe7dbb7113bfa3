# Helpers for the crash-safety scripts (sourced). Each script is run as: sh SCRIPT.sh AXIOM
set -eu
axiom=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/../support/run_helpers.sh"

# A model small enough that a step takes milliseconds, on Debian's Fashion-MNIST.
printf '%s' '{"features": 16, "heads": 2, "upper_layers": 2, "row_layers": 1, "ff_multiple": 2}' > "$work/config.json"
common="--config $work/config.json --batch 4 --eval-images 8 --threads 1"

# The steps of the training lines of run $1's metrics.jsonl, on one line ("1 2 3").
trained_steps() { sed -n 's/^{"step":\([0-9]*\),"train_bits_per_dim".*/\1/p' "$1/metrics.jsonl" | tr '\n' ' ' | sed 's/ $//'; }

# Fails unless run $1 is a whole run at step $2: its checkpoint, its files and nothing else of
# axiom's left over, and one metrics line for each of the steps 1..$2, in order (none torn).
check_whole_run() {
  [ "$(step_of "$1")" = "$2" ] || fail "$1 is at step $(step_of "$1"), not $2"
  model=$(printf 'model-%06d.safetensors' "$2")
  [ -f "$1/$model" ] || fail "$1 lacks $model"
  leftovers=$(ls "$1" | grep -E '\.tmp-|pending' || true)
  [ -z "$leftovers" ] || fail "$1 holds leftovers: $leftovers"
  [ "$(trained_steps "$1")" = "$(seq -s ' ' 1 "$2")" ] || fail "$1/metrics.jsonl has the steps $(trained_steps "$1")"
  [ "$(grep -cv '^{.*}$' "$1/metrics.jsonl")" = 0 ] || fail "$1/metrics.jsonl has a torn line"
}

# Fails unless runs $1 and $2 hold the same weights at step $3, bit for bit.
check_same_weights() {
  model=$(printf 'model-%06d.safetensors' "$3")
  cmp -s "$1/$model" "$2/$model" || fail "the weights of $1 and $2 at step $3 differ"
}
