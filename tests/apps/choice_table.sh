# `axiom bench products --write-table FILE` (apps/bench/bench_products.cpp): writes this CPU's rows
# of the GEMM choice table, keeps the other SIMD targets' rows, leaves no temporary file, and
# refuses, before any timing and without touching it, a file that is not such a table.
# Run as: sh choice_table.sh AXIOM
set -eu
axiom=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/../support/run_helpers.sh"
first_line='// Which library runs each float32 GEMM fastest, per SIMD target and CPU vendor'

# a build without oneDNN (the ThreadSanitizer build) has nothing to compare: refused, nothing written
if "$axiom" bench products --config "" --write-table "$work/new.inc" > "$work/out.txt" 2>&1; then :; else
  grep -qF "this build of axiom has no oneDNN" "$work/out.txt" || fail "refusal says: $(cat "$work/out.txt")"
  [ ! -e "$work/new.inc" ] || fail "a table was written without oneDNN"
  echo "choice table: refused without oneDNN, as it must be: $(cat "$work/out.txt")"
  exit 0
fi
[ "$(head -n 1 "$work/new.inc")" = "$first_line" ] || fail "a new table's first line is not the table's"

# not a table: refused at once (the message comes before any shape is timed), the file unchanged
echo "my notes" > "$work/notes.inc"
status=0
"$axiom" bench products --config "" --write-table "$work/notes.inc" > "$work/out.txt" 2>&1 || status=$?
[ "$status" -ne 0 ] || fail "a file that is not a table was accepted"
grep -qF "is not a table of GEMM choices" "$work/out.txt" || fail "refusal says: $(cat "$work/out.txt")"
! grep -q "GFLOP/s" "$work/out.txt" || fail "shapes were timed before the refusal: $(cat "$work/out.txt")"
[ "$(cat "$work/notes.inc")" = "my notes" ] || fail "the refused file was changed"

# an existing table: another key's rows kept, this CPU's stale row replaced; a file named like a
# temporary one is left alone. This CPU's key: its SIMD target and vendor, "AVX3 Intel"
target=$("$axiom" bench products --config "" | sed -n 's/.*table rows "\([^"]*\)";.*/\1/p')
[ -n "$target" ] || fail "no table key in the bench's first line"
case "$target" in *" AMD" | *" Intel" | *" other CPU") ;; *) fail "the key names no vendor: $target" ;; esac
cat > "$work/table.inc" <<TABLE
$first_line
{"OTHER", {1, 2, 3, false, false}, 1, GemmLibrary::openblas},  // kept
{"$target", {7, 7, 7, false, false}, 1, GemmLibrary::onednn},  // stale
TABLE
echo "not ours" > "$work/table.inc.partial"
"$axiom" bench products --config "" --write-table "$work/table.inc" > "$work/out.txt" 2>&1 ||
  fail "writing the table failed: $(cat "$work/out.txt")"
[ "$(head -n 1 "$work/table.inc")" = "$first_line" ] || fail "the first line changed"
grep -qF '{"OTHER", {1, 2, 3, false, false}, 1, GemmLibrary::openblas},  // kept' "$work/table.inc" ||
  fail "another target's row was dropped"
! grep -qF "// stale" "$work/table.inc" || fail "this target's old row was kept"
rows=$(grep -c "^{\"$target\", {" "$work/table.inc")
[ "$rows" -eq 5 ] || fail "$rows rows of $target, not the 5 shapes of bench ops: $(cat "$work/table.inc")"
grep -qF '{"'"$target"'", {1024, 1024, 1024, false, false}, 1, GemmLibrary::' "$work/table.inc" ||
  fail "no row for 1024^3"
[ "$(cat "$work/table.inc.partial")" = "not ours" ] || fail "a file axiom did not write was changed"
leftover=$(ls "$work" | grep -c "tmp" || true)
[ "$leftover" -eq 0 ] || fail "temporary files left: $(ls "$work")"
echo "choice table: $rows rows of $target written, OTHER kept, refusals and foreign files respected"
