# Numeric flags and paths are read strictly: out of range, overflowing, negative for an unsigned value, not a
# number, or not finite is an error that names the flag and the accepted range (exit status 105,
# CLI11's), and nothing is created. Run as: sh flags.sh AXIOM
set -eu
export LC_ALL=C  # bytes are bytes: a message quoting a path that is not UTF-8 still matches
axiom=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/../support/run_helpers.sh"

# refused "EXPECTED MESSAGE" ARGS...: the command fails at once with the message, leaving no --out.
refused() {
  expected=$1
  shift
  status=0
  "$axiom" "$@" > "$work/out.txt" 2>&1 < /dev/null || status=$?
  [ "$status" -ne 0 ] || fail "accepted: $*"
  grep -qF -- "$expected" "$work/out.txt" || fail "'$*' says '$(cat "$work/out.txt")', not '$expected'"
  [ ! -e "$work/run" ] || fail "'$*' created its --out"
  echo "refused: $* -> $(cat "$work/out.txt")"
}
out="--out $work/run"
refused "--steps: '99999999999999999999' is outside the accepted range [1, 1000000000000]" train $out --steps 99999999999999999999
refused "--seed: '-1' is outside the accepted range [0, 18446744073709551615]" train $out --seed -1
refused "--seed: '18446744073709551616' is outside the accepted range" train $out --seed 18446744073709551616
refused "--batch: '12x' is not a whole number in [1, 1048576]" train $out --batch 12x
refused "--batch: '0' is outside the accepted range [1, 1048576]" train $out --batch 0
refused "--lr: '1e30' is outside the accepted range [1e-12, 10]" train $out --lr 1e30
refused "--lr: 'nan' is not a number in [1e-12, 10]" train $out --lr nan
refused "--minutes: 'inf' is not a number in [0, 1e+07]" train $out --minutes inf
refused "--threads: '4294967297' is outside the accepted range [1, 4096]" train $out --threads 4294967297
refused "--checkpoint-blocks: '-1' is outside the accepted range [0, 1048576]" train $out --checkpoint-blocks -1
refused "--checkpoint-blocks: '2x' is not a whole number in [0, 1048576]" bench train --checkpoint-blocks 2x
refused "--profile: '0' is outside the accepted range [1, 1000000000000]" train $out --profile 0
refused "--patience: '0' is outside the accepted range [1, 1000000000000]" train $out --patience 0
refused "--steps: '5' is outside the accepted range [10, 100000]" lr-find $out --steps 5
refused "[lr-find] the rates run from start to end, 0 < start < end; got start 1, end 0.001" lr-find $out --start 1 --end 0.001
refused "--min-delta: '-1' is outside the accepted range [0, 1e+06]" classify $out --patience 2 --min-delta -1
refused "--profile: '0' is outside the accepted range [1, 1000]" bench train --profile 0
refused "--precision: fp16 not in {float32,bfloat16,tf32}" train $out --precision fp16
refused "--schedule: step not in {constant,linear,cosine}" train $out --schedule step
refused "--beta2: '1' is outside the accepted range [0, 0.999999]" train $out --beta2 1
refused "[train] a linear schedule decays after the warmup: steps (50) must be greater than warmup_steps (50)" train $out --schedule linear --steps 50 --warmup 50
refused "[train] --precision bfloat16 runs on the CPU only, not on --device cuda" train $out --precision bfloat16 --device cuda
refused "[train] --precision tf32 runs on a CUDA device only, not on --device cpu" train $out --precision tf32
refused "[bench] --precision tf32 runs on a CUDA device only, not on --device cpu" bench train --matmul tf32
refused "[train] --device meta computes nothing" train $out --device meta
refused "[bench] --device meta computes nothing" bench sample --device meta
refused "--limit: '-1' is outside the accepted range [0, 1000000000000]" eval --checkpoint "$work/run" --limit -1
refused "--temperature: '0' is outside the accepted range [0.001, 1000]" sample --checkpoint "$work/run" --temperature 0
refused "--n: '100000000' is outside the accepted range [1, 1048576]" sample --checkpoint "$work/run" --n 100000000
mkfifo "$work/fifo"
refused "[config] '$work/fifo' is not a regular file" train $out --config "$work/fifo"
refused "[config] '/dev/zero' is not a regular file" train $out --config /dev/zero
printf '{"features": 64, "features": 32}' > "$work/twice.json"
refused "not valid JSON: the key 'features' appears twice in one object" train $out --config "$work/twice.json"
printf '{"upper_layers": 1099511627776}' > "$work/layers.json"
refused "upper_layers must be in [0, 100000], got 1099511627776" train $out --config "$work/layers.json"
refused "[train] training with 1000000 images a step needs about" train $out --batch 1000000
printf '{"features": 18446744073709551615}' > "$work/huge.json"
refused "features is far beyond its range, got 18446744073709551615" train $out --config "$work/huge.json"
# Paths: not UTF-8 (axiom records paths in JSON files), too long, a loop of links; a command that
# does not exist; a thread count with a space.
refused "--out: '$work/x$(printf '\377')' is not valid UTF-8" train --out "$work/x$(printf '\377')"
refused "--data-dir: '$(printf '\377')' is not valid UTF-8" train $out --data-dir "$(printf '\377')"
long=$(printf "%05000d" 0)
refused "is neither a checkpoint directory nor a file (File name too long)" eval --checkpoint "$work/$long"
ln -s loop "$work/loop"
refused "cannot create the run's directory '$work/loop': Too many levels of symbolic links" train --out "$work/loop"
refused "'frobnicate' is not a command: train, eval, sample, classify, graph, lr-find, bench" frobnicate
AXIOM_NUM_THREADS=' 2' refused "[AXIOM_NUM_THREADS] expected a whole number from 1 to 4096, got ' 2'" sample --checkpoint "$work/run"
