# What goes wrong in a data-parallel job ends it within seconds, with the error printed: ranks
# given different flags; a data file missing on one rank (as on one machine of several); a
# command that runs in one process only.
. "$(dirname "$0")/lib.sh"

expect_failure 60 "started with different command lines" \
  $launcher -np 1 "$axiom" train $common --steps 2 --out "$work/a" --lr 0.001 : -np 1 "$axiom" train $common --steps 2 --out "$work/a" --lr 0.002

# The same command line, but run from two directories, one without the data: rank 1 fails alone
# while rank 0 waits for it in a collective; MPI_Abort ends both, the error is printed once.
mkdir -p "$work/has/data" "$work/lacks/data"
ln -s /usr/share/datasets/fashion-mnist/* "$work/has/data/"
expect_failure 60 "rank 1 of 2: \[" \
  $launcher -np 1 -wdir "$work/has" "$axiom" train $common --steps 2 --data-dir data --out "$work/b" : \
            -np 1 -wdir "$work/lacks" "$axiom" train $common --steps 2 --data-dir data --out "$work/b"
[ "$(grep -c "rank 1 of 2: " "$work/out.txt")" -eq 1 ] || fail "the error was not printed once"

expect_failure 60 "this command runs in one process" $launcher -np 2 "$axiom" bench ops
