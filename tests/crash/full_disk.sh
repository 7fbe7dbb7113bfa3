# A full disk: training on a small tmpfs that fills up at different moments (the first checkpoint,
# a later one, the loss curve, an append to metrics.jsonl or the event file) stops with an error that names the file
# and says why, exit status 1; the last checkpoint stays whole, and once there is room again the
# run resumes and ends bitwise equal to a run that never ran out of room.
# The tmpfs is mounted in a private mount namespace (unshare), which needs root or user namespaces;
# without either the script reports a skip (exit 77).
if [ "${AXIOM_PRIVATE_MOUNTS:-}" != 1 ]; then
  for flags in "--mount" "--user --map-root-user --mount"; do
    if unshare $flags true 2> /dev/null; then AXIOM_PRIVATE_MOUNTS=1 exec unshare $flags sh "$0" "$@"; fi
  done
  echo "skipped: no private mount namespace here (unshare needs root or user namespaces)"
  exit 77
fi
. "$(dirname "$0")/lib.sh"
disk=$work/disk
mkdir "$disk"
trap 'umount "$disk" 2> /dev/null; rm -rf "$work"' EXIT

# A fresh 1 MiB tmpfs with about $1 KiB free (a filler file takes the rest).
fresh_disk() {
  umount "$disk" 2> /dev/null || true
  mount -t tmpfs -o size=1m tmpfs "$disk" || fail "cannot mount a tmpfs"
  dd if=/dev/zero of="$disk/filler" bs=1k count=$((1024 - $1)) 2> /dev/null || true
}

# Runs `axiom train` with the arguments given, which must fail for want of room, cleanly.
expect_full_disk() {
  status=0
  "$axiom" train "$@" < /dev/null > "$work/log.txt" 2>&1 || status=$?
  [ "$status" -eq 1 ] || fail "exit status $status on a full disk, not 1: $(cat "$work/log.txt")"
  grep -q "No space left on device\|is the disk full" "$work/log.txt" || fail "the error does not say the disk is full: $(cat "$work/log.txt")"
  grep "^axiom: " "$work/log.txt" | grep -q "$disk/run" || fail "the error does not name the file: $(cat "$work/log.txt")"
  echo "  $(grep '^axiom: \[' "$work/log.txt")"
}

steps=12
train="$common --steps $steps --checkpoint-every 2 --eval-every 5"
"$axiom" train $train --out "$work/straight" < /dev/null > /dev/null 2>&1 || fail "the run with room failed"

# The disk fills at the first checkpoint (40 KiB free), at later ones (300, 450 KiB), or at the
# first loss curve (100 KiB, with a curve after every step and no checkpoint after the first).
for free in 40 100 300 450; do
  echo "$free KiB free:"
  fresh_disk $free
  if [ $free = 100 ]; then
    expect_full_disk $common --steps $steps --checkpoint-every 1000 --eval-every 1 --out "$disk/run"
    grep -q "loss.png" "$work/log.txt" || fail "the failed write was not loss.png's: $(cat "$work/log.txt")"
  else
    expect_full_disk $train --out "$disk/run"
  fi
  if [ -f "$disk/run/checkpoint.json" ]; then
    echo "  the last checkpoint, of step $(step_of "$disk/run"), is whole"
  fi
  rm "$disk/filler"
  "$axiom" train $train --resume --out "$disk/run" < /dev/null > "$work/log.txt" 2>&1 || fail "no resume with room: $(cat "$work/log.txt")"
  check_whole_run "$disk/run" $steps
  check_same_weights "$disk/run" "$work/straight" $steps
  echo "  resumed with room: step $steps, equal to the run that had room"
done

# An append to metrics.jsonl or the event file: a run at step 12, then a disk with one page free and
# only metrics to write (no checkpoint, curve or samples for a while) until a new page is needed.
echo "metrics.jsonl:"
fresh_disk 600
"$axiom" train $train --out "$disk/run" < /dev/null > /dev/null 2>&1 || fail "the run before filling the disk failed"
dd if=/dev/zero of="$disk/more" bs=4k 2> /dev/null || true  # the disk is full,
truncate -s -4096 "$disk/more"                              # but for one page
expect_full_disk $common --steps 300 --checkpoint-every 1000 --eval-every 1000 --resume --out "$disk/run"
grep -q "metrics.jsonl\|events.out.tfevents.axiom" "$work/log.txt" ||
  fail "the failed write was not an append to metrics.jsonl or the event file: $(cat "$work/log.txt")"
[ -z "$(tail -c 1 "$disk/run/metrics.jsonl")" ] || echo "  (metrics.jsonl ends in a torn line)"
rm "$disk/filler" "$disk/more"
"$axiom" train $common --steps 14 --checkpoint-every 2 --eval-every 5 --resume --out "$disk/run" < /dev/null > "$work/log.txt" 2>&1 || fail "no resume with room: $(cat "$work/log.txt")"
check_whole_run "$disk/run" 14
echo "  resumed with room at step 12: metrics.jsonl whole again"
