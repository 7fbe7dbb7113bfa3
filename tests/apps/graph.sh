# `axiom graph`: the graph of one training step of the tiny preset, as DOT text that Graphviz's dot
# draws (an SVG here), and the graph of its gradient, whose ops a backward pass recorded (filled
# orange), and with each Transformer block collapsed into one box. A name that exists is refused, as is a format dot is not asked for here; neither writes
# anything. Run as: sh graph.sh AXIOM
set -eu
axiom=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")  # absolute: one run below is from another folder
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/../support/run_helpers.sh"

"$axiom" graph --config tiny > "$work/step.dot"
ops=$(grep -c '^  op[0-9]* \[' "$work/step.dot")
parameters=$(grep -c '^  leaf[0-9]* \[' "$work/step.dot")
[ "$ops" -gt 20 ] || fail "a tiny step drew $ops ops"
grep -q 'label="logits.weight' "$work/step.dot" || fail "the parameters are not drawn under their names"
grep -q 'fdd0a2' "$work/step.dot" && fail "a forward pass drawn with backward-pass ops"
dot -Tsvg "$work/step.dot" -o "$work/by_hand.svg" || fail "dot cannot read axiom graph's output"

"$axiom" graph --config tiny --out "$work/step.svg" 2> "$work/said.txt"
grep -q '<svg' "$work/step.svg" || fail "--out step.svg is not an SVG"
grep -qF "graph: wrote $work/step.svg" "$work/said.txt" || fail "says '$(cat "$work/said.txt")'"

# A name with a quote and $(...) in it is a name: dot writes that file, and no command runs.
odd="it's \$(touch ran).svg"
(cd "$work" && "$axiom" graph --config tiny --out "$odd" 2> /dev/null) || fail "--out with a quote in its name was refused"
grep -q '<svg' "$work/$odd" || fail "--out with a quote in its name is not an SVG"
[ ! -e "$work/ran" ] || fail "a command in --out's name ran"

"$axiom" graph --config tiny --gradient --out "$work/gradient.dot" 2> /dev/null
backward=$(grep -c 'fdd0a2' "$work/gradient.dot")
[ "$backward" -gt "$ops" ] || fail "the gradient's graph has $backward backward-pass ops, the step $ops ops"
echo "a tiny step: $ops ops, $parameters parameters; its gradient's graph: $backward backward-pass ops"

# Collapsed: each Transformer block one box, with its parameters inside; fewer boxes, dot reads it.
"$axiom" graph --config tiny --collapse 1 > "$work/blocks.dot"
blocks=$(grep -c '^  scope[0-9]* \[shape=box3d' "$work/blocks.dot")
boxes=$(grep -c '^  [a-z]*[0-9]* \[' "$work/blocks.dot")
[ "$blocks" -eq 4 ] || fail "--collapse 1 drew $blocks blocks of tiny's 4"
grep -q 'label="outer.0\\n[0-9]* ops, [0-9]* parameters"' "$work/blocks.dot" || fail "no box for block outer.0"
[ "$boxes" -lt "$((ops + parameters))" ] || fail "--collapse 1 drew $boxes boxes, no fewer than $((ops + parameters))"
dot -Tsvg "$work/blocks.dot" -o "$work/blocks.svg" || fail "dot cannot read the collapsed graph"
echo "collapsed: $boxes boxes, $blocks of them blocks"
status=0
"$axiom" graph --config tiny --collapse -1 > "$work/out.txt" 2>&1 || status=$?
[ "$status" -ne 0 ] || fail "--collapse -1 accepted"
grep -qF -- "--collapse: '-1' is outside the accepted range [0, 8]" "$work/out.txt" || fail "--collapse -1 says '$(cat "$work/out.txt")'"

for refused in "$work/step.svg:exists; axiom writes a new file only" "$work/graph.jpg:name a .dot, .gv, .svg, .png or .pdf file"; do
  path=${refused%%:*}
  expected=${refused#*:}
  status=0
  "$axiom" graph --config tiny --out "$path" > "$work/out.txt" 2>&1 || status=$?
  [ "$status" -ne 0 ] || fail "--out $path accepted"
  grep -qF -- "$expected" "$work/out.txt" || fail "--out $path says '$(cat "$work/out.txt")'"
done
[ ! -e "$work/graph.jpg" ] || fail "a refused --out was written"
echo "graph: ok"
