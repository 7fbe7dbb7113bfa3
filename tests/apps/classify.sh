# `axiom classify` end to end on tiny settings, on Debian's Fashion-MNIST: the model learns the
# labels well above chance (10%) in 300 steps; its run directory holds a checkpoint that `axiom
# eval` scores to the same accuracy, and that --resume continues to exactly the weights of a run
# that never stopped; the other commands refuse a classifier's run with a message that says why.
# Run as: sh classify.sh AXIOM MODEL (vit, gru or lstm).
set -eu
axiom=$1
model=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/../support/run_helpers.sh"
flags="--model $model --batch 32 --width 16 --heads 2 --layers 1 --limit 500 --eval-images 100 --threads 1"
accuracy_of() { sed -n 's/.* \([0-9.]*\)% accuracy over 500 images.*/\1/p' "$1"; }

"$axiom" classify $flags --steps 300 --out "$work/run" > "$work/trained.txt" 2>&1 || fail "classify: $(cat "$work/trained.txt")"
grep -Eq "fashion-mnist test: ([4-9][0-9]|100)\.[0-9]+% accuracy over 500 images" "$work/trained.txt" ||
  fail "no accuracy above 40%: $(cat "$work/trained.txt")"
[ "$(step_of "$work/run")" -eq 300 ] || fail "the checkpoint is not of step 300"
grep -q '"held_out_accuracy"' "$work/run/metrics.jsonl" || fail "metrics.jsonl has no held-out accuracy"
[ -f "$work/run/loss.png" ] || fail "no loss.png"
echo "$model: $(accuracy_of "$work/trained.txt")% after 300 steps, checkpoint at step 300"

"$axiom" eval --checkpoint "$work/run" --limit 500 --threads 1 > "$work/eval.txt" 2>&1 || fail "eval: $(cat "$work/eval.txt")"
[ "$(accuracy_of "$work/eval.txt")" = "$(accuracy_of "$work/trained.txt")" ] ||
  fail "eval scores $(accuracy_of "$work/eval.txt")%, training ended at $(accuracy_of "$work/trained.txt")%"
"$axiom" classify $flags --steps 300 --out "$work/run" --resume > "$work/again.txt" 2>&1 || fail "resume: $(cat "$work/again.txt")"
grep -q "nothing to train" "$work/again.txt" || fail "a finished run trained again: $(cat "$work/again.txt")"
echo "$model: axiom eval gives the same accuracy; a finished run resumes to nothing to train"

# 40 steps in two invocations (a constant rate: a run of no fixed length) = 40 steps in one
constant="$flags --schedule constant --warmup 5 --eval-every 15 --checkpoint-every 15"
"$axiom" classify $constant --steps 40 --out "$work/once" > /dev/null 2>&1 || fail "the 40-step run"
"$axiom" classify $constant --steps 25 --out "$work/split" > /dev/null 2>&1 || fail "the first 25 steps"
"$axiom" classify $constant --steps 40 --out "$work/split" --resume > /dev/null 2>&1 || fail "the last 15 steps"
cmp -s "$work/once/model-000040.safetensors" "$work/split/model-000040.safetensors" || fail "the resumed run's weights differ"
echo "$model: 25 steps, a stop and 15 more give the weights of 40 steps, bit for bit"

if "$axiom" train --out "$work/run" --resume --steps 400 > "$work/wrong.txt" 2>&1; then fail "train resumed a classifier's run"; fi
grep -q "holds a run of a classifier; continue it with axiom classify --resume" "$work/wrong.txt" || fail "$(cat "$work/wrong.txt")"
if "$axiom" sample --checkpoint "$work/run" --out "$work/s.png" > "$work/wrong.txt" 2>&1; then fail "sample drew from a classifier"; fi
grep -q "holds a classifier, not an image model" "$work/wrong.txt" || fail "$(cat "$work/wrong.txt")"
if "$axiom" classify $(echo "$flags" | sed "s/--width 16/--width 32/") --steps 300 --out "$work/run" --resume > "$work/wrong.txt" 2>&1; then fail "resumed with another width"; fi
grep -q "differ from the run's config" "$work/wrong.txt" || fail "$(cat "$work/wrong.txt")"
echo "$model: train, sample and a resume with other sizes refuse the run, saying why"

# A classifier too large for the machine is refused before anything is made: its step is measured
# on the shape-only device (models/memory_budget.h).
if "$axiom" classify --model "$model" --width 4096 --layers 1000 --batch 60000 --steps 200 --out "$work/huge" > "$work/huge.txt" 2>&1; then
  fail "a classifier of thousands of GiB was trained"
fi
grep -q "a step needs about .* but this machine has .* use a smaller --batch, --width or --layers" "$work/huge.txt" || fail "$(cat "$work/huge.txt")"
[ ! -e "$work/huge" ] || fail "the refused run made its directory"
echo "$model: a classifier too large for the machine is refused before it is made, with the estimate"
