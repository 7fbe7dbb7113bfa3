# `mpirun -np 2 axiom train` on Fashion-MNIST takes the single-process steps (losses and held-out
# figures agree to float32 rounding), also with blocks recomputed in backward on the two ranks
# (--checkpoint-blocks; tests/autograd checks that the hooks hear of each parameter once); only
# rank 0 writes the run's files; `mpirun -np 2 axiom eval` gives one process's bits/dim; and
# `mpirun -np 2 axiom classify` takes the single-process steps of a classifier.
. "$(dirname "$0")/lib.sh"

$launcher -np 2 "$axiom" train $common --steps 4 --eval-every 2 --checkpoint-blocks 2 --out "$work/two" < /dev/null
"$axiom" train $common --steps 4 --eval-every 2 --out "$work/one" < /dev/null

[ "$(wc -l < "$work/two/metrics.jsonl")" -eq "$(wc -l < "$work/one/metrics.jsonl")" ] || fail "metrics.jsonl: other line counts"
metrics_match "$work/two" "$work/one" "train" train_bits_per_dim held_out_bits_per_dim
ls "$work/two" > "$work/files.txt"
[ "$(grep -c '^model-' "$work/files.txt")" -eq 1 ] || fail "expected one model file: $(cat "$work/files.txt")"

$launcher -np 2 "$axiom" eval --checkpoint "$work/two" --limit 30 --batch 7 --json < /dev/null > "$work/eval_two.txt"
"$axiom" eval --checkpoint "$work/two" --limit 30 --batch 7 --json < /dev/null > "$work/eval_one.txt"
[ "$(wc -l < "$work/eval_two.txt")" -eq 1 ] || fail "mpirun eval printed $(wc -l < "$work/eval_two.txt") lines, not 1"
close_enough "$(numbers "$work/eval_two.txt" bits_per_dim)" "$(numbers "$work/eval_one.txt" bits_per_dim)" 1e-12 "eval"
echo "2 processes match 1: $(cat "$work/eval_two.txt")"

# `mpirun -np 2 axiom classify` takes the single-process steps too (the same losses and held-out
# accuracy), and rank 0 alone prints the test accuracy at the end.
classify="--model gru --width 16 --steps 6 --batch 8 --warmup 2 --eval-every 3 --eval-images 40 --limit 100 --threads 1"
$launcher -np 2 "$axiom" classify $classify --out "$work/classify_two" < /dev/null > "$work/classify_two.txt"
"$axiom" classify $classify --out "$work/classify_one" < /dev/null > "$work/classify_one.txt"
metrics_match "$work/classify_two" "$work/classify_one" "classify" train_loss held_out_loss held_out_accuracy
[ "$(grep -c "accuracy over 100 images" "$work/classify_two.txt")" -eq 1 ] || fail "mpirun classify printed: $(cat "$work/classify_two.txt")"
echo "classify, 2 processes match 1: $(cat "$work/classify_two.txt")"
