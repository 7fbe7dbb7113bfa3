#!/bin/sh
# A sweep of hostile but realistic input through the real `axiom` command: bad numbers and missing
# values for every numeric flag, paths that are directories, FIFOs, devices, too long or oddly
# named, broken configs, corrupted run directories, checkpoints and safetensors files, broken
# datasets, bad devices and environment. Each input ends as one of
#   error     exit status 1 (or CLI11's 104-114) with an "axiom: ..." line and no raw C++ exception
#             text (std::, terminate, what(), Aborted, Segmentation, nlohmann, basic_filebuf, an
#             unwrapped nlohmann error "axiom: [json.exception...", "filesystem error", ...)
#   accepted  exit status 0: right for some inputs (a config with a UTF-8 BOM, a run directory
#             named with a space), all listed at the end
#   CRASH     a signal, a timeout (60 s; 20 s in the parts with FIFOs, where a read blocks forever),
#             raw exception text, no "axiom:" line, or another exit status
# and no input may change or delete a file the sweep made that is not axiom's (a user's
# model-best.safetensors beside a run, a file a symbolic link in a run points to): each is
# compared byte for byte with a copy after every input.
# Prints a line per input (outcome, command, first line of output ... the last "axiom:" line) and
# a summary; exits 1 on a crash or a changed foreign file. A tiny model (8x8 images, 8 features)
# on a 20-image .npy data set keeps every accepted input to a second or so.
# Run as: sh hostile_sweep.sh AXIOM   (from any directory; 304 inputs, each a run of axiom)
set -u
export LC_ALL=C  # bytes are bytes: a message quoting a path that is not UTF-8 still matches
if [ $# -ne 1 ]; then
  echo "usage: sh hostile_sweep.sh AXIOM_BINARY" >&2
  exit 2
fi
case $1 in
  /*) axiom=$1 ;;
  *) axiom=$(pwd)/$1 ;;
esac
[ -x "$axiom" ] || { echo "not an executable: $axiom" >&2; exit 2; }
W=$(mktemp -d) || exit 2
cleanup() {
  chmod -R u+rwx "$W" 2> /dev/null
  rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
cd "$W" || exit 2
started=$(date +%s)
nl='
'

# --- running one input -----------------------------------------------------------------------------

n=0 errors=0 accepted=0 crashes=0 changed=0
threads=1  # AXIOM_NUM_THREADS of every input (light on a shared machine); the env inputs change it
limit=60   # seconds before an input counts as hung
raw='std::|terminate|what\(\)|Aborted|Segmentation|nlohmann|^axiom: \[json\.exception|basic_|ios_base|stoi|bad_alloc|filesystem error|vector::|core dumped|Sanitizer|runtime error:'
what=      # what the next input's command line does not show (a config's text)
foreign=   # "FILE|COPY" words: files the sweep made that no input may change
: > "$W/accepted.txt"
: > "$W/crashes.txt"
: > "$W/changed.txt"
: > "$W/notes.txt"

# The command as shown: $W for the sweep's directory, long words cut, newlines as \n, other
# unprintable bytes as ?.
shown() {
  line=
  for word; do
    [ ${#word} -le 90 ] || word="$(printf '%.50s' "$word")...(${#word} chars)"
    case $word in
      '' | *[!A-Za-z0-9_./:=+,@%-]*) word="'$word'" ;;
    esac
    line="$line $word"
  done
  printf '%s' "$line" | awk -v w="$W" '{ gsub(w, "$W"); printf "%s%s", (NR > 1 ? "\\n" : ""), $0 }' |
    LC_ALL=C tr -c '[:print:]' '?'
}

# foreign FILE...: files no input may change (compared with a copy after each input).
foreign() {
  for file; do
    copy=$W/reference/$(( $(printf '%s\n' $foreign | grep -c .) + 1 ))
    mkdir -p "$W/reference"
    cp "$file" "$copy"
    foreign="$foreign $file|$copy"
  done
}

# try ARGS...: runs `axiom ARGS` once, classifies the outcome, prints it.
try() {
  n=$((n + 1))
  status=0
  env AXIOM_NUM_THREADS="$threads" timeout -k 5 "$limit" "$axiom" "$@" < /dev/null > "$W/out.txt" 2>&1 || status=$?
  first=$(head -n 1 "$W/out.txt" | sed "s|$W|\$W|g" | cut -c 1-300 | LC_ALL=C tr -c '[:print:]\n' '?')
  message=$(grep '^axiom: ' "$W/out.txt" | tail -n 1 | sed "s|$W|\$W|g" | cut -c 1-300 | LC_ALL=C tr -c '[:print:]\n' '?')
  if [ "$status" -eq 124 ]; then
    kind="CRASH (hung: killed after ${limit}s)"
  elif [ "$status" -ge 128 ]; then
    kind="CRASH (signal $((status - 128)))"
  elif grep -Eq "$raw" "$W/out.txt"; then
    kind="CRASH (raw exception text, exit $status)"
  elif [ "$status" -eq 0 ]; then
    kind=accepted
  elif [ "$status" -ne 1 ] && { [ "$status" -lt 104 ] || [ "$status" -gt 114 ]; }; then
    kind="CRASH (exit status $status)"
  elif [ -z "$message" ]; then
    kind="CRASH (no 'axiom:' line, exit $status)"
  else
    kind=error
  fi
  said=$first
  [ -z "$message" ] || [ "$message" = "$first" ] || said="$first ... $message"
  [ "$threads" = 1 ] && env_shown= || env_shown="AXIOM_NUM_THREADS='$threads' "
  entry="$n. ${env_shown}axiom$(shown "$@")${what:+ [$what]} -> $said"
  what=
  printf '%s\n' "$kind: $entry"
  case $kind in
    error) errors=$((errors + 1)) ;;
    accepted) accepted=$((accepted + 1)) && printf '%s\n' "$entry" >> "$W/accepted.txt" ;;
    *) crashes=$((crashes + 1)) && printf '%s\n' "$kind: $entry" >> "$W/crashes.txt" ;;
  esac
  kept=
  for pair in $foreign; do
    if cmp -s "${pair%%|*}" "${pair#*|}"; then
      kept="$kept $pair"
    else
      changed=$((changed + 1))
      echo "FOREIGN FILE CHANGED OR DELETED by input $n: ${pair%%|*}" | sed "s|$W|\$W|g" | tee -a "$W/changed.txt"
    fi
  done
  foreign=$kept
}

skipped() { echo "skipped: $*"; }

# --- making files ------------------------------------------------------------------------------------

byte() { printf "\\$(printf %03o "$1")"; }
be32() { byte $(($1 >> 24 & 255)); byte $(($1 >> 16 & 255)); byte $(($1 >> 8 & 255)); byte $(($1 & 255)); }
le64() {
  v=$1
  for i in 1 2 3 4 5 6 7 8; do
    byte $((v & 255))
    v=$((v >> 8))
  done
}
repeat() { printf "%0${2}d" 0 | tr 0 "$1"; }  # repeat CHAR COUNT
noise() { LC_ALL=C awk -v n="$1" 'BEGIN { srand(1); for (i = 0; i < n; i++) printf "%c", int(rand() * 256) }'; }  # noise BYTES

# npy FILE DESCR 'SHAPE' BYTES: an NPY 1.0 file with that header and BYTES bytes of data.
npy() {
  dict="{'descr': '$2', 'fortran_order': False, 'shape': ($3), }"
  length=$(((${#dict} + 11 + 63) / 64 * 64 - 10))
  {
    printf '\223NUMPY\001\000'
    byte $((length % 256))
    byte $((length / 256))
    printf '%s' "$dict"
    printf "%$((length - ${#dict} - 1))s\n" ''
    noise "$4"
  } > "$1"
}

# idx_images FILE N H W / idx_labels FILE N [LABEL]: MNIST-style IDX files.
idx_images() { { printf '\000\000\010\003'; be32 "$2"; be32 "$3"; be32 "$4"; head -c $(($2 * $3 * $4)) /dev/zero; } > "$1"; }
idx_labels() { { printf '\000\000\010\001'; be32 "$2"; head -c "$2" /dev/zero | tr '\000' "\\$(printf %03o "${3:-0}")"; } > "$1"; }
# mnist_dir DIR N: the four files of a split pair, N 28x28 images each.
mnist_dir() {
  mkdir -p "$1"
  for split in train t10k; do
    idx_images "$1/$split-images-idx3-ubyte" "$2" 28 28
    idx_labels "$1/$split-labels-idx1-ubyte" "$2"
  done
}

# A safetensors file's header (its JSON text) and its data.
header_of() { tail -c +9 "$1" | head -c "$(od -An -tu8 -N8 "$1" | tr -d ' ')"; }
data_of() { tail -c +$((9 + $(od -An -tu8 -N8 "$1" | tr -d ' '))) "$1"; }
# edit_safetensors FILE SED [BYTES]: FILE with its header edited by SED (padded to 8 bytes, as the
# format does), and its data cut to BYTES.
edit_safetensors() {
  header=$(header_of "$1" | sed "$2")
  header="$header$(printf "%$(((8 - ${#header} % 8) % 8))s" '')"
  data_of "$1" | head -c "${3:-1000000000}" > "$W/data.bin"
  { le64 ${#header}; printf '%s' "$header"; cat "$W/data.bin"; } > "$1.new"
  mv "$1.new" "$1"
}

# without FLAG WORDS...: the flag-value pairs WORDS, less FLAG's.
without() {
  skip=$1
  shift
  while [ $# -gt 1 ]; do
    [ "$1" = "$skip" ] || printf ' %s %s' "$1" "$2"
    shift 2
  done
}

# setup ARGS...: an axiom run the sweep needs (not an input); stops the sweep if it fails.
setup() {
  if ! env AXIOM_NUM_THREADS=1 timeout 120 "$axiom" "$@" < /dev/null > "$W/out.txt" 2>&1; then
    echo "setup failed: axiom $*" >&2
    cat "$W/out.txt" >&2
    exit 2
  fi
}

# --- fixtures: a data set, two tiny configs and their runs ------------------------------------------

mkdir -p "$W/files" "$W/runs" "$W/o"
npy "$W/d.npy" '|u1' '20, 8, 8' 1280
printf '{"height": 8, "width": 8, "channels": 1, "features": 8, "heads": 2, "upper_layers": 0, "row_layers": 0, "encoder_layers": 0, "ff_multiple": 1}\n' > "$W/small.json"
sed 's/"features": 8/"features": 16/' "$W/small.json" > "$W/other.json"
T="--config $W/small.json --data $W/d.npy --steps 1 --batch 2 --eval-images 2"
setup train $T --out "$W/base"
setup train --config "$W/other.json" --data "$W/d.npy" --steps 1 --batch 2 --eval-images 2 --out "$W/other"
[ -f "$W/base/model-000001.safetensors" ] || { echo "setup: no model-000001.safetensors in the base run" >&2; exit 2; }
E="--limit 2 --batch 2"   # eval's usual flags
C="--model vit --steps 2 --batch 4 --width 4 --heads 2 --layers 1 --limit 20 --warmup 1 --eval-images 20"  # classify's (on Fashion-MNIST)
R="--resume --steps 2 --eval-images 2"   # resuming a run one more step
o() { echo "$W/o/$((n + 1))"; }   # a new --out for the next input

# copy_run NAME: a copy of the base run in $r.
copy_run() {
  r=$W/runs/$1
  [ ! -e "$r" ] || { echo "sweep error: two runs named $1" >&2; exit 2; }
  cp -R "$W/base" "$r"
}

# Paths of every kind.
mkdir "$W/adir"
mkfifo "$W/fifo" "$W/fifo.npy" "$W/pipe.png"
mkdir "$W/adir.npy" "$W/adir.png"
echo "just text" > "$W/text.txt"
ln -s loop "$W/loop"
ln -s /dev/zero "$W/zero.npy"
long_name=$W/$(repeat a 5000)
long_path=$W$(i=0; while [ $i -lt 25 ]; do printf '/%s' "$(repeat b 200)"; i=$((i + 1)); done)
cp "$W/small.json" "$W/with space.json"
cp "$W/small.json" "$W/new${nl}line.json"
odd=$(printf 'x\377')   # a name that is not UTF-8 (Latin-1 "ÿ")
cp "$W/d.npy" "$W/$odd.npy"
printf '\000\000\000\000' > "$W/unreadable.json" && chmod 000 "$W/unreadable.json"
root_reads=no
cat "$W/unreadable.json" > /dev/null 2>&1 && root_reads=yes

# ================================================================================================
echo "== the command line"
try
try frobnicate
try train
try train --out
try train --out "$(o)" --no-such-flag
try train --out "$(o)" extra
try train --out "$(o)" $T --resume=yes
try train --out "$(o)" $T --steps 2
try eval
try eval --checkpoint "$W/base" $E --split validation
try sample --checkpoint "$W/base" --method slow
try bench
try bench train --config "$W/small.json" --steps 1001
try train --help
try train --out "$(o)" --config tiny --batch 1000000
try train --out "$(o)" $T --device tpu
try eval --checkpoint "$W/base" $E --device cuda:99
try sample --checkpoint "$W/base" --n 1 --out "$W/s.png" --device cuda:-1
try sample --checkpoint "$W/base" --n 1 --out "$W/s.png" --device ''
for value in abc 0 99999999999999999999 ' 2'; do
  threads=$value
  try sample --checkpoint "$W/base" --n 1 --out "$W/s.png"
done
threads=1

# ================================================================================================
echo "== numbers: 2 of these values for each numeric flag, in turn"
cat > "$W/numbers.txt" << 'EOF'
99999999999999999999
-1
nan
inf

0x10
 5
5 
1e999
1.5
+5
5abc
-9223372036854775809
18446744073709551616
<missing>
-0
５
1 2
EOF
count=$(wc -l < "$W/numbers.txt")
i=0
for item in "train --steps" "train --minutes" "train --batch" "train --lr" "train --beta1" "train --beta2" "train --warmup" "train --clip" "train --seed" \
  "train --eval-every" "train --eval-images" "train --checkpoint-every" "train --threads" "eval --batch" "eval --limit" \
  "eval --threads" "sample --n" "sample --temperature" "sample --seed" "sample --columns" "sample --zoom" "sample --threads" \
  "bench-train --batch" "bench-train --steps" "bench --threads" "classify --steps" "classify --batch" "classify --lr" \
  "classify --weight-decay" "classify --warmup" "classify --width" "classify --layers" "classify --heads" "classify --patch" \
  "classify --seed" "classify --limit"; do
  command=${item% *} flag=${item#* }
  for j in 0 1; do
    value=$(sed -n "$(((2 * i + j) % count + 1))p" "$W/numbers.txt")
    case $command in
      train) set -- train --out "$(o)" $(without "$flag" $T) ;;
      eval) set -- eval --checkpoint "$W/base" $(without "$flag" $E) ;;
      sample) set -- sample --checkpoint "$W/base" --out "$W/s.png" $(without "$flag" --n 1) ;;
      bench-train) set -- bench train --config "$W/small.json" $(without "$flag" --steps 1 --batch 1) ;;
      bench) set -- bench ;;
      classify) set -- classify --out "$(o)" $(without "$flag" $C) ;;
    esac
    [ "$command" = bench ] && rest="train --config $W/small.json --steps 1 --batch 1" || rest=
    if [ "$value" = "<missing>" ]; then try "$@" "$flag" $rest; else try "$@" "$flag" "$value" $rest; fi
  done
  i=$((i + 1))
done

# sizes that parse but do not fit: a patch that does not divide 28, heads that do not divide the
# width, a batch beyond the training images, a warmup as long as the run, data that is not there
try classify --out "$(o)" $(without --patch $C) --patch 5
try classify --out "$(o)" $(without --heads $C) --heads 3
try classify --out "$(o)" $(without --batch $C) --batch 70000
try classify --out "$(o)" $(without --warmup $C) --warmup 2
try classify --out "$(o)" $C --data-dir "$W/nonexistent"
try classify --out "$(o)" $C --data mnist

# ================================================================================================
echo "== paths"
limit=20
for path in "$W/adir" "$W/fifo" /dev/zero "$W/nonexistent.json" "$long_name" "$W/with space.json" "$W/new${nl}line.json" ''; do
  try train --out "$(o)" $(without --config $T) --config "$path"
done
if [ $root_reads = yes ]; then skipped "--config of a chmod 000 file (running as root, it stays readable)"; else
  try train --out "$(o)" $(without --config $T) --config "$W/unreadable.json"
fi
try bench train --config "$W/fifo" --steps 1 --batch 1
for path in "$W/text.txt" / "$long_name" "$long_path" "$W/o/with space" "$W/o/new${nl}line" "$W/loop" "$W/o/$odd"; do
  try train --out "$path" $T
done
for path in "$W/adir.npy" "$W/fifo.npy" "$W/zero.npy" "$W/nonexistent.npy" '' imagenet "$W/$odd.npy" "$W/d.npz"; do
  try train --out "$(o)" $(without --data $T) --data "$path"
done
try train --out "$(o)" $T --data-dir "$W/$odd"
for path in "$W/adir" "$W/fifo" /dev/zero "$long_name" '' "$W/loop"; do
  try eval --checkpoint "$path" $E
done
try eval --checkpoint "$W/o/$odd" $E --json
try sample --checkpoint "$W/fifo" --n 1 --out "$W/s.png"
for path in "$W/adir.png" "$W/s.PNG" "$W/nonexistent/s.png" "$W/pipe.png" "$long_name.png" "$W/npydir.png" "$W/$odd.png"; do
  [ "$path" != "$W/npydir.png" ] || mkdir -p "$W/npydir.npy"
  try sample --checkpoint "$W/base" --n 1 --out "$path"
done
echo "my data" > "$W/pic.npy"
foreign "$W/pic.npy"  # beside the grid, not named: never written
try sample --checkpoint "$W/base" --n 1 --out "$W/pic.png"
mkfifo "$W/values-fifo.npy"  # its own: the one of the eval inputs below stays a FIFO
for path in "$W/adir.npy" "$W/s.png" "$W/nonexistent/v.npy" "$W/values-fifo.npy" "$long_name.npy" "$W/$odd.npy"; do
  try sample --checkpoint "$W/base" --n 1 --out "$W/v.png" --values "$path"
done
for path in "$W/nonexistent.npy" "$W/fifo.npy"; do
  try eval --checkpoint "$W/base" $E --data "$path"
done
try eval --checkpoint "$W/base" $E --data mnist --data-dir "$W/adir"
limit=60

# ================================================================================================
echo "== configs"
config() {  # config TEXT: train with a config file of TEXT (printf's format)
  printf "$1" > "$W/c.json"
  what="c.json: $(printf '%.80s' "$1" | LC_ALL=C tr -c '[:print:]' '?')"
  [ ${#1} -le 80 ] || what="$what...(${#1} characters)"
  try train --out "$(o)" $(without --config $T) --config "$W/c.json"
}
small_with() { printf '{%s}' "$small" | sed "$1"; }  # small_with SED: the small config, edited
small='"height": 8, "width": 8, "channels": 1, "features": 8, "heads": 2, "upper_layers": 0, "row_layers": 0, "encoder_layers": 0, "ff_multiple": 1'
config '{'
config '{"features": }'
config '{"features": 8} {"heads": 2}'
config "{$small, \"features\": 16}"
config '{"features": "8"}'
config '{"features": 8.0}'
config '{"features": null}'
config '{"inner": 5}'
config "{\"features\": $(repeat '[' 100000)$(repeat ']' 100000)}"
config "$(repeat '[' 100000)"
config '{"features": 1e400}'
config '{"features": 99999999999999999999}'
config '{"features": 18446744073709551615}'
config '{"upper_layers": 9223372036854775808}'
config '{"features": -8}'
config "$(small_with 's/"heads": 2/"heads": 3/')"
config "$(small_with 's/"channels": 1/"channels": 3/')"
config "$(small_with 's/"height": 8/"height": 9/')"
config '{"features": 1048576, "heads": 1}'
config "{$small, \"dropout\": 1}"
config "{$small, \"inner\": \"gru\"}"
config "{$small, \"featurs\": 8}"
config "{$small, \"attention\": \"sparse\"}"
config "{$small, \"attention\": \"full\", \"inner\": \"lstm\"}"
config "{$small, \"attention\": \"local1d\", \"relative\": 2}"
config "{$small, \"attention\": \"local2d\", \"local_rows\": 0}"
config "{$small, \"attention\": \"local1d\", \"local_length\": 99999999999}"
config "$(small_with 's/"row_layers": 0/"row_layers": 1/; s/}$/, "attention": "local2d", "local_rows": 100, "local_columns": 3}/')"
config '{"height": 65536, "width": 65536, "features": 8, "heads": 2, "attention": "full"}'
config "$(small_with 's/"row_layers": 0/"row_layers": 1/; s/}$/, "attention": "local2d", "local_rows": 65536, "local_columns": 65536}/')"
config '[]'
config '{}'
config ''
config '\357\273\277{'"$small"'}'
config "{$small, \"inner\": \"transformer\\\\u0000\"}"
config "{$small}\000"
head -c 4096 "$axiom" > "$W/binary.json"
try train --out "$(o)" $(without --config $T) --config "$W/binary.json"
{ printf '{%s' "$small"; printf '%2097152s' ''; printf '}'; } > "$W/big.json"
try train --out "$(o)" $(without --config $T) --config "$W/big.json"

# ================================================================================================
echo "== datasets"
D="--config tiny --data fashion-mnist --steps 1 --batch 2 --eval-images 2"
F=$(without --data $D)   # the same, for another --data
data_dir() {  # data_dir NAME: train on Fashion-MNIST from $W/data/NAME
  try train --out "$(o)" $D --data-dir "$W/data/$1"
}
mkdir -p "$W/data/empty"
data_dir empty
mnist_dir "$W/data/good" 20
data_dir good
mnist_dir "$W/data/truncated" 20
head -c 3000 "$W/data/good/train-images-idx3-ubyte" > "$W/data/truncated/train-images-idx3-ubyte"
data_dir truncated
mnist_dir "$W/data/magic" 20
{ printf 'PK\003\004'; tail -c +5 "$W/data/good/train-images-idx3-ubyte"; } > "$W/data/magic/train-images-idx3-ubyte"
data_dir magic
mnist_dir "$W/data/rank0" 20
printf '\000\000\010\000' > "$W/data/rank0/train-images-idx3-ubyte"
data_dir rank0
mnist_dir "$W/data/labels" 20
idx_labels "$W/data/labels/train-labels-idx1-ubyte" 19
data_dir labels
mnist_dir "$W/data/label200" 20
idx_labels "$W/data/label200/train-labels-idx1-ubyte" 20 200
data_dir label200
mnist_dir "$W/data/trailing" 20
echo extra >> "$W/data/trailing/train-images-idx3-ubyte"
data_dir trailing
mnist_dir "$W/data/notgzip" 20
rm "$W/data/notgzip/train-images-idx3-ubyte"
echo "not gzip at all" > "$W/data/notgzip/train-images-idx3-ubyte.gz"
data_dir notgzip
mnist_dir "$W/data/gzcut" 20
gzip -c "$W/data/good/train-images-idx3-ubyte" | head -c 40 > "$W/data/gzcut/train-images-idx3-ubyte.gz"
rm "$W/data/gzcut/train-images-idx3-ubyte"
data_dir gzcut
mnist_dir "$W/data/gzjunk" 20
{ printf '\037\213'; noise 2000; } > "$W/data/gzjunk/train-images-idx3-ubyte.gz"
rm "$W/data/gzjunk/train-images-idx3-ubyte"
data_dir gzjunk
mkdir -p "$W/data/trainonly"
for file in train-images-idx3-ubyte train-labels-idx1-ubyte; do cp "$W/data/good/$file" "$W/data/trainonly/"; done
data_dir trainonly
try train --out "$(o)" $F --data mnist
try train --out "$(o)" $F --data cifar10
mkdir -p "$W/data/cifar"
for b in 1 2 3 4 5; do head -c 100 /dev/zero > "$W/data/cifar/data_batch_$b.bin"; done
: > "$W/data/cifar/test_batch.bin"
try train --out "$(o)" $F --data cifar10 --data-dir "$W/data/cifar"
mkdir -p "$W/data/cifar200"
for b in data_batch_1 data_batch_2 data_batch_3 data_batch_4 data_batch_5 test_batch; do
  { byte 200; head -c 3072 /dev/zero; } > "$W/data/cifar200/$b.bin"
done
try train --out "$(o)" $F --data cifar10 --data-dir "$W/data/cifar200"
try train --out "$(o)" $F --data moving-fashion-mnist --data-dir "$W/data/empty"
npy_case() {  # npy_case FILE: train the small config on FILE
  try train --out "$(o)" $(without --data $T) --data "$1"
}
: > "$W/files/empty.npy"
npy_case "$W/files/empty.npy"
{ printf 'NOTNUMPY'; tail -c +9 "$W/d.npy"; } > "$W/files/magic.npy"
npy_case "$W/files/magic.npy"
{ printf '\223NUMPY\011\000'; tail -c +9 "$W/d.npy"; } > "$W/files/version.npy"
npy_case "$W/files/version.npy"
{ printf '\223NUMPY\001\000\377\377'; tail -c +11 "$W/d.npy"; } > "$W/files/headerlength.npy"
npy_case "$W/files/headerlength.npy"
npy "$W/files/f8.npy" '<f8' '20, 8, 8' 10240
npy_case "$W/files/f8.npy"
npy "$W/files/five.npy" '|u1' '5, 8, 8' 320
npy_case "$W/files/five.npy"
npy "$W/files/short.npy" '|u1' '20, 8, 8' 1000
npy_case "$W/files/short.npy"
npy "$W/files/huge.npy" '|u1' '1099511627776, 8, 8' 1280
npy_case "$W/files/huge.npy"
npy "$W/files/flat.npy" '|u1' '20, 64' 1280
npy_case "$W/files/flat.npy"
npy "$W/files/nine.npy" '|u1' '20, 9, 9' 1620
npy_case "$W/files/nine.npy"
sed '1s/False/Maybe/' "$W/d.npy" > "$W/files/garbled.npy"
npy_case "$W/files/garbled.npy"

# ================================================================================================
echo "== run directories: --out"
mkdir -p "$W/user"
echo "my notes" > "$W/user/notes.txt"
cp "$W/base/model-000001.safetensors" "$W/user/model-best.safetensors"
foreign "$W/user/notes.txt" "$W/user/model-best.safetensors"
try train --out "$W/user" $T
try train --out "$W/user" $T --force
try train --out "$W/user" $(without --steps $T) --steps 2 --force --resume
try train --out "$W/user" $(without --steps $T) --steps 3 --resume
mkdir -p "$W/user2"
cp "$W/other/model-000001.safetensors" "$W/user2/model-000001.safetensors"
echo '{"step": 1}' > "$W/user2/metrics.jsonl"
foreign "$W/user2/model-000001.safetensors" "$W/user2/metrics.jsonl"
try train --out "$W/user2" $T --force
try train --out "$W/user2" $T --force --resume
# A new run in a directory holding only a user's file that has the name of a leftover of a
# killed run (train.lock; checkpoint.pending.json naming a model file beside it).
mkdir -p "$W/user3"
echo "my lock, not axiom's" > "$W/user3/train.lock"
foreign "$W/user3/train.lock"
try train --out "$W/user3" $T
mkdir -p "$W/user4"
cp "$W/other/model-000001.safetensors" "$W/user4/model-000001.safetensors"
echo '{"files": ["model-000001.safetensors"]}' > "$W/user4/checkpoint.pending.json"
foreign "$W/user4/model-000001.safetensors" "$W/user4/checkpoint.pending.json"
try train --out "$W/user4" $T
ln -s "$W/user" "$W/userlink"
try train --out "$W/userlink" $T
try train --out "$W/base" $T
copy_run nockpt
rm "$r/checkpoint.json"
try train --out "$r" $T
try train --out "$r" $R
try eval --checkpoint "$r" $E
if chmod 555 "$W/runs" && ! (: > "$W/runs/probe") 2> /dev/null; then
  try train --out "$W/runs/new" $T
else
  rm -f "$W/runs/probe"
  skipped "--out in a read-only directory (running as root, chmod 555 does not stop writes)"
fi
chmod 755 "$W/runs"

# ================================================================================================
echo "== run directories: checkpoint.json"
# Each line: WHICH NAME SED (WHICH: e = eval, r = train --resume, er = both), SED applied to checkpoint.json.
cp "$W/base/model-000001.safetensors" "$W/runs/outside.safetensors"
while read -r which name edit; do
  copy_run "$name"
  sed "$edit" "$W/base/checkpoint.json" > "$r/checkpoint.json"
  case $which in *e*) try eval --checkpoint "$r" $E ;; esac
  case $which in *r*) try train --out "$r" $R ;; esac
done << EOF
e step-string s/"step": 1,/"step": "1",/
r step-above-2^62 s/"step": 1,/"step": 4611686018427387905,/
r step-2^62 s/"step": 1,/"step": 4611686018427387904,/
e version-2 s/"version": 1,/"version": 2,/
e model-missing s/model-000001/model-000099/
e model-parent s|"model-000001.safetensors"|"../outside.safetensors"|
e model-name-empty s/"model-000001.safetensors"/""/
e model-names-optimizer s/"model": "model-000001/"model": "optimizer-000001/
r optimizer-names-model s/"optimizer": "optimizer-000001/"optimizer": "model-000001/
e model-names-checkpoint-json s/"model": "model-000001.safetensors"/"model": "checkpoint.json"/
e model-long-name s/"model-000001.safetensors"/"$(repeat m 5000).safetensors"/
e config-array s/"config": {/"config": [], "was": {/
e config-heads-3 s/"heads": 2,/"heads": 3,/
e config-features-string s/"features": 8,/"features": "8",/
er config-features-16 s/"features": 8,/"features": 16,/
r training-string s/"training": {/"training": "x", "was": {/
r batch-0 s/"batch_size": 2,/"batch_size": 0,/
r data-gone s|"data": "[^"]*"|"data": "$W/gone.npy"|
r training-unknown-key s/"batch_size": 2,/"batch_size": 2, "momentum": 0.5,/
e rng-missing s/"rng": {/"gnr": {/
r rng-offset-max s/"offset": [0-9]*/"offset": 18446744073709551615/
EOF
# Whole-file damage.
copy_run nul-name
sed 's/"model-000001.safetensors"/"model-000001.safetensors\\u0000.txt"/' "$W/base/checkpoint.json" > "$r/checkpoint.json"
try eval --checkpoint "$r" $E
try train --out "$r" $R
copy_run truncated-json
head -c 200 "$W/base/checkpoint.json" > "$r/checkpoint.json"
try eval --checkpoint "$r" $E
try train --out "$r" $R
copy_run empty-json
: > "$r/checkpoint.json"
try sample --checkpoint "$r" --n 1 --out "$W/s.png"
copy_run binary-json
cp "$W/base/model-000001.safetensors" "$r/checkpoint.json"
try eval --checkpoint "$r" $E
copy_run deep-json
{ printf '{"deep": '; repeat '[' 100000; repeat ']' 100000; printf ','; tail -c +2 "$W/base/checkpoint.json"; } > "$r/checkpoint.json"
try eval --checkpoint "$r" $E
copy_run big-json
{ head -n 1 "$W/base/checkpoint.json"; printf '%2097152s\n' ''; tail -n +2 "$W/base/checkpoint.json"; } > "$r/checkpoint.json"
try eval --checkpoint "$r" $E
copy_run bom-json
{ printf '\357\273\277'; cat "$W/base/checkpoint.json"; } > "$r/checkpoint.json"
try eval --checkpoint "$r" $E
copy_run dir-json
rm "$r/checkpoint.json" && mkdir "$r/checkpoint.json"
try eval --checkpoint "$r" $E
try train --out "$r" $R
limit=20
copy_run fifo-json
rm "$r/checkpoint.json" && mkfifo "$r/checkpoint.json"
try eval --checkpoint "$r" $E
try train --out "$r" $R
limit=60
copy_run zero-json
rm "$r/checkpoint.json" && ln -s /dev/zero "$r/checkpoint.json"
try sample --checkpoint "$r" --n 1 --out "$W/s.png"

# ================================================================================================
echo "== run directories: safetensors files"
model=model-000001.safetensors optimizer=optimizer-000001.safetensors
copy_run model-truncated
head -c 1000 "$W/base/$model" > "$r/$model"
try eval --checkpoint "$r" $E
try train --out "$r" $R
copy_run model-empty
: > "$r/$model"
try train --out "$r" $R
copy_run model-header-length-huge
{ printf '\377\377\377\377\377\377\377\177'; tail -c +9 "$W/base/$model"; } > "$r/$model"
try eval --checkpoint "$r" $E
copy_run model-header-length-0
{ le64 0; tail -c +9 "$W/base/$model"; } > "$r/$model"
try eval --checkpoint "$r" $E
copy_run model-header-garbage
printf 'X}' | dd of="$r/$model" bs=1 seek=8 conv=notrunc 2> /dev/null
try eval --checkpoint "$r" $E
copy_run model-offsets-beyond
edit_safetensors "$r/$model" 's/\[17472,18496\]/[17472,99999999]/'
try eval --checkpoint "$r" $E
copy_run model-shape
edit_safetensors "$r/$model" 's/"shape":\[256,8\]/"shape":[256,9]/'
try eval --checkpoint "$r" $E
copy_run model-dtype
edit_safetensors "$r/$model" 's/"dtype":"F32","shape":\[8,256\]/"dtype":"F64","shape":[8,128]/'
try eval --checkpoint "$r" $E
copy_run model-missing-tensor
edit_safetensors "$r/$model" 's/,"logits.bias":{[^}]*}//' 17472
try eval --checkpoint "$r" $E
copy_run model-metadata-config
edit_safetensors "$r/$model" 's/\\"features\\": 8/\\"features\\": 16/'
try sample --checkpoint "$r/$model" --n 1 --out "$W/s.png"
copy_run model-other-config
cp "$W/other/$model" "$r/$model"
try eval --checkpoint "$r" $E
try train --out "$r" $R
copy_run model-dir
rm "$r/$model" && mkdir "$r/$model"
try eval --checkpoint "$r" $E
copy_run model-link
cp "$W/base/$model" "$W/files/kept.safetensors"
foreign "$W/files/kept.safetensors"
rm "$r/$model" && ln -s "$W/files/kept.safetensors" "$r/$model"
try train --out "$r" $R
copy_run optimizer-truncated
head -c 5000 "$W/base/$optimizer" > "$r/$optimizer"
try train --out "$r" $R
copy_run optimizer-other-config
cp "$W/other/$optimizer" "$r/$optimizer"
try train --out "$r" $R
try eval --checkpoint "$W/base/$model" $E --data "$W/d.npy"
try eval --checkpoint "$W/base/$optimizer" $E
try sample --checkpoint "$W/runs/model-truncated/$model" --n 1 --out "$W/s.png"

# ================================================================================================
echo "== run directories: the rest of a run (--resume)"
copy_run metrics-garbage
{ printf 'not json\n{"step": "1"}\n{"step": 99999999999999999999}\n{"step": 1, "lr": "x"}\n{"step": 1, "train_bits_per_dim": 1e400}\n'
  noise 3000; } >> "$r/metrics.jsonl"
try train --out "$r" $R
copy_run metrics-long-line
printf '%2097152s' '' | tr ' ' 7 >> "$r/metrics.jsonl"
try train --out "$r" $R
copy_run metrics-deep
{ repeat '[' 100000; repeat ']' 100000; echo; } >> "$r/metrics.jsonl"
try train --out "$r" $R
copy_run metrics-dir
rm "$r/metrics.jsonl" && mkdir "$r/metrics.jsonl"
try train --out "$r" $R
limit=20
copy_run metrics-fifo
rm "$r/metrics.jsonl" && mkfifo "$r/metrics.jsonl"
try train --out "$r" $R
limit=60
copy_run metrics-link
cp "$W/base/metrics.jsonl" "$W/files/my-metrics.jsonl"
foreign "$W/files/my-metrics.jsonl"
rm "$r/metrics.jsonl" && ln -s "$W/files/my-metrics.jsonl" "$r/metrics.jsonl"
try train --out "$r" $R
copy_run loss-dir
rm "$r/loss.png" && mkdir "$r/loss.png"
try train --out "$r" $R
copy_run loss-link
cp "$W/base/loss.png" "$W/files/my-plot.png"
foreign "$W/files/my-plot.png"
rm "$r/loss.png" && ln -s "$W/files/my-plot.png" "$r/loss.png"
try train --out "$r" $R
copy_run lock-dir
rm "$r/train.lock" && mkdir "$r/train.lock"
try train --out "$r" $R
limit=20
copy_run lock-fifo
rm "$r/train.lock" && mkfifo "$r/train.lock"
try train --out "$r" $R
copy_run pending-fifo
mkfifo "$r/checkpoint.pending.json"
try train --out "$r" $R
limit=60
copy_run pending-garbage
noise 500 > "$r/checkpoint.pending.json"
try train --out "$r" $R
copy_run beside
echo "my notes" > "$r/notes.txt"
cp "$W/other/$model" "$r/model-000000.safetensors"
cp "$W/other/$optimizer" "$r/optimizer-999999.safetensors"
foreign "$r/notes.txt" "$r/model-000000.safetensors" "$r/optimizer-999999.safetensors"
try train --out "$r" $R
try train --out "$r" $R --batch 4
try train --out "$r" $R --config tiny
try train --out "$r" $R --data fashion-mnist
try train --out "$r" --resume --steps 3 --eval-images 2 --lr 0.001000001

# ================================================================================================
seconds=$(($(date +%s) - started))
echo
echo "accepted inputs:"
sed 's/^/  /' "$W/accepted.txt"
echo "crashes:"
sed 's/^/  /' "$W/crashes.txt"
echo "foreign files changed or deleted:"
sed 's/^/  /' "$W/changed.txt"
echo "notes:"
sed 's/^/  /' "$W/notes.txt"
echo "inputs $n, clear errors $errors, accepted $accepted, crashes $crashes, foreign files changed $changed"
echo "($seconds s)"
[ "$crashes" -eq 0 ] && [ "$changed" -eq 0 ]
