#!/bin/sh
# axiom as a library: installs the build into a fresh prefix (cmake --install), then builds this
# folder's program against it twice, with CMake's find_package(axiom) and with pkg-config, and runs
# both, builds and runs the READMEs' C++ programs, and imports the Python package axiom from the
# prefix when the build has one. Run as: sh run.sh BUILD_DIR CMAKE_COMMAND CXX_COMPILER
set -eu
build=$1 cmake=$2 cxx=$3
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== cmake --install into $work/prefix"
"$cmake" --install "$build" --prefix "$work/prefix" > "$work/install.log" || { cat "$work/install.log"; exit 1; }
grep -c "Installing" "$work/install.log" | sed 's/$/ files installed/'

echo "== the installed headers are exactly those <axiom/axiom.h> reaches"
include=$work/prefix/include
[ -f "$include/axiom/axiom.h" ] || { echo "no include/axiom/axiom.h in the prefix"; exit 1; }
find "$include/axiom" -type f | xargs -n1 realpath | sort > "$work/installed.txt"
"$cxx" -std=c++20 -M -I"$include" "$here/main.cpp" | tr ' \\' '\n\n' | grep "^$include/axiom/" |
  xargs -r -n1 realpath | sort -u > "$work/reached.txt"
if ! diff "$work/installed.txt" "$work/reached.txt" > "$work/headers.diff"; then
  echo "installed (<) against reached from axiom.h (>):"; cat "$work/headers.diff"; exit 1
fi
wc -l < "$work/installed.txt" | sed 's/$/ headers, all reached from axiom.h/'

echo "== find_package(axiom), target axiom::axiom"
"$cmake" -S "$here" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_BUILD_TYPE=Release > "$work/configure.log" || { cat "$work/configure.log"; exit 1; }
"$cmake" --build "$work/cmake-build" > "$work/build.log" || { cat "$work/build.log"; exit 1; }
"$work/cmake-build/downstream"

echo "== pkg-config --cflags --libs axiom"
pc_dir=$(dirname "$(find "$work/prefix" -name axiom.pc)")
flags=$(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs axiom)
echo "pkg-config: $flags"
# shellcheck disable=SC2086 # the flags are words
"$cxx" -std=c++20 "$here/main.cpp" $flags -o "$work/downstream-pkg-config"
"$work/downstream-pkg-config"

# The READMEs' C++ blocks that are whole programs (they have a main), built the same way and run:
# a README's program that stops compiling or throws fails here. (Their Python blocks run in
# tests/python/test_readme_snippets.py.)
echo "== the READMEs' C++ programs, built with pkg-config and run"
source_dir=$(cd "$here/../.." && pwd)
for readme in $(cd "$source_dir" && ls README.md ./*/README.md ./*/*/README.md 2>/dev/null); do
  awk -v prefix="$work/program-$(echo "$readme" | tr '/.' '__')" '
    /^```cpp$/ { inside = 1; text = ""; next }
    /^```$/ && inside { inside = 0; if (text ~ /int main\(/) print text > (prefix "-" ++n ".cpp"); next }
    inside { text = text $0 "\n" }' "$source_dir/$readme"
done
programs=0
for program in "$work"/program-*.cpp; do
  [ -e "$program" ] || continue
  echo "$(basename "$program")"
  # shellcheck disable=SC2086 # the flags are words
  "$cxx" -std=c++20 "$program" $flags -o "${program%.cpp}" || { echo "$(basename "$program") does not compile"; exit 1; }
  "${program%.cpp}" > "${program%.cpp}.out" || { echo "$(basename "$program") failed"; cat "${program%.cpp}.out"; exit 1; }
  programs=$((programs + 1))
done
[ "$programs" -gt 0 ] || { echo "no C++ program found in the READMEs"; exit 1; }
echo "$programs README program(s) built and run"

# The Python package, where the build made one: imported from the prefix alone, from another folder.
package=$(find "$work/prefix" -path '*/dist-packages/axiom/__init__.py' | head -n 1)
if [ -n "$package" ]; then
  echo "== import axiom from $(dirname "$package")"
  python=/usr/bin/python3
  [ -x "$python" ] || python=python3
  (cd "$work" && PYTHONPATH=$(dirname "$(dirname "$package")") "$python" -c '
import axiom, numpy as np
x = axiom.from_numpy(np.arange(3.0), requires_grad=True)
(x * x).sum().backward()
assert axiom.__file__.startswith("'"$work/prefix"'"), axiom.__file__
print("installed axiom:", list(np.asarray(x.grad)))')
fi
