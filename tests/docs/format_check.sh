#!/bin/sh
# Whether the C++ lines changed since BASE follow .clang-format: git clang-format reformats only
# the lines a change touched, and this script fails, showing the difference, when it would change
# any. BASE defaults to the commit that added .clang-format, so every line written or touched since
# the style was set is checked, and older lines are left as they are until someone edits them.
# Run as: sh tests/docs/format_check.sh [BASE]   (CI runs it; needs git-clang-format, in Debian's
# clang-format package: sh apps/install-deps.sh --fuzz)
set -eu
cd "$(dirname "$0")/../.."
base=${1:-$(git log --format=%H --diff-filter=A -- .clang-format | tail -n 1)}
if [ -z "$base" ] || ! git cat-file -e "$base^{commit}" 2>/dev/null; then
  echo "format_check: no base commit (a shallow clone?): checking the last commit's lines only"
  base=HEAD~1
fi
git_clang_format=$(command -v git-clang-format || command -v git-clang-format-16 || true)
[ -n "$git_clang_format" ] || { echo "format_check: git-clang-format not found (apt-get install clang-format)"; exit 1; }
diff=$("$git_clang_format" --diff --style=file "$base" -- '*.h' '*.cpp' '*.cu' '*.cuh' 2>&1) || true
case "$diff" in
  ""|*"no modified files to format"*|*"did not modify any files"*)
    echo "format_check: the C++ lines changed since $(git rev-parse --short "$base") follow .clang-format"; exit 0 ;;
esac
echo "format_check: these changed lines do not follow .clang-format (git clang-format $base fixes them):"
echo "$diff"
exit 1
