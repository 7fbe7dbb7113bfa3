#!/bin/sh
# axiom as a library: installs the build into a fresh prefix (cmake --install), then builds this
# folder's program against it twice, with CMake's find_package(axiom) and with pkg-config, and runs
# both; builds every C++ block of the READMEs (and runs those that run); imports the Python package
# axiom from the prefix when the build has one. Run as: sh run.sh BUILD_DIR CMAKE_COMMAND CXX_COMPILER
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

# The READMEs' C++ blocks (tests/docs/readme_snippets.py sorts them and checks those that quote
# axiom's source): programs, and fragments wrapped into programs, are built and run; fragments
# too long to run are compiled. A README block that stops compiling or throws fails here. (Their
# Python blocks run in tests/python/test_readme_snippets.py.)
echo "== the READMEs' C++ blocks, built with pkg-config"
source_dir=$(cd "$here/../.." && pwd)
python3 "$source_dir/tests/docs/readme_snippets.py" "$source_dir" "$work/snippets"
# The fragments of apps/README.md use apps/'s headers, which are not installed: found in the source
# tree after the installed headers, so that both include the installed core.
include_flags="-I$include/axiom -I$source_dir"
built=0
for snippet in "$work"/snippets/*.cpp; do
  [ -e "$snippet" ] || continue
  name=$(basename "$snippet")
  case "$name" in
    *.compile.cpp)
      # shellcheck disable=SC2086 # the flags are words
      "$cxx" -std=c++20 -fsyntax-only "$snippet" $flags $include_flags || { echo "$name ($(head -n1 "$snippet")) does not compile"; exit 1; }
      echo "$name: compiles" ;;
    *.run.cpp)
      # shellcheck disable=SC2086 # the flags are words
      "$cxx" -std=c++20 "$snippet" $flags $include_flags -o "${snippet%.cpp}" || { echo "$name ($(head -n1 "$snippet")) does not compile"; exit 1; }
      "${snippet%.cpp}" > "${snippet%.cpp}.out" || { echo "$name ($(head -n1 "$snippet")) failed"; cat "${snippet%.cpp}.out"; exit 1; }
      echo "$name: built and run" ;;
  esac
  built=$((built + 1))
done
[ "$built" -gt 0 ] || { echo "no C++ block found in the READMEs"; exit 1; }
echo "$built README C++ block(s) built"

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
