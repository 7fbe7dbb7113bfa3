#!/bin/sh
# Whether the C++ files changed since BASE follow .clang-format: clang-format --dry-run on each, and
# a failure naming every line it would change. BASE defaults to the commit that added
# .clang-format (every file was formatted once right after it), so every C++ file touched since
# the style was set is checked.
# Run as: sh tests/docs/format_check.sh [BASE]   (CI runs it; clang-format is Debian's package of
# that name: sh apps/install-deps.sh --fuzz installs it). To fix a file: clang-format -i FILE.
set -eu
cd "$(dirname "$0")/../.."
base=${1:-$(git log --format=%H --diff-filter=A -- .clang-format | tail -n 1)}
if [ -z "$base" ] || ! git cat-file -e "$base^{commit}" 2>/dev/null; then
  echo "format_check: no base commit (a shallow clone?): checking the last commit's files only"
  base=HEAD~1
fi
clang_format=$(command -v clang-format || command -v clang-format-16 || true)
[ -n "$clang_format" ] || { echo "format_check: clang-format not found (apt-get install clang-format)"; exit 1; }
files=$(git diff --name-only --diff-filter=d "$base" -- '*.h' '*.cpp' '*.cu' '*.cuh')
[ -n "$files" ] || { echo "format_check: no C++ file changed since $(git rev-parse --short "$base")"; exit 0; }
# shellcheck disable=SC2086 # one word per file name (the project's names have no spaces)
if ! "$clang_format" --dry-run --Werror --style=file $files; then
  echo "format_check: the files above do not follow .clang-format (clang-format -i FILE fixes them)"
  exit 1
fi
echo "format_check: the $(echo "$files" | wc -l) C++ files changed since $(git rev-parse --short "$base") follow .clang-format"
