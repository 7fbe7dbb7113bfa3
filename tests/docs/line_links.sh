#!/bin/sh
# docs:line_links — every link to lines of a source file in the project's Markdown files
# ([text](path#L10-L20 "title")) must carry a title, and the title must be found in the first three
# of those lines (where a link's range starts: a function's signature, a formula's first line): when
# code moves and a README's line numbers go stale, this fails and names the link.
# Usage: line_links.sh SOURCE_DIR
set -u
root=$1
cd "$root" || exit 1
failures=0
links=0
for doc in README.md */README.md */*/README.md; do
  [ -f "$doc" ] || continue
  # one link per line of output: path#Lfirst[-Llast][ "title"]
  grep -oE '\]\([^ )"]*#L[0-9]+(-L[0-9]+)?( "[^"]*")?\)' "$doc" | sed 's/^](//; s/)$//' >"${TMPDIR:-/tmp}/line_links.$$"
  while IFS= read -r link; do
    links=$((links + 1))
    target=${link%%#*}
    rest=${link#*#L}
    lines=${rest%% *}
    first=${lines%%-*}
    last=${lines##*-L}
    [ "$last" = "$lines" ] && last=$first
    case "$rest" in
      *' "'*) title=${rest#* \"}; title=${title%\"} ;;
      *) title="" ;;
    esac
    dir=$(dirname "$doc")
    file="$dir/$target"
    [ -f "$file" ] || file="$target"
    if [ -z "$title" ]; then
      echo "$doc: the link to $target lines $first-$last has no title (the text it points at)"
      failures=$((failures + 1))
    elif [ ! -f "$file" ]; then
      echo "$doc: the link to $target: no such file"
      failures=$((failures + 1))
    elif ! sed -n "${first},${last}p" "$file" | head -n 3 | grep -qF -- "$title"; then
      echo "$doc: $target lines $first-$last do not start with \"$title\" (in their first three lines)"
      failures=$((failures + 1))
    fi
  done <"${TMPDIR:-/tmp}/line_links.$$"
  rm -f "${TMPDIR:-/tmp}/line_links.$$"
done
echo "line_links: $links links to source lines, $failures wrong"
[ "$links" -gt 0 ] && [ "$failures" -eq 0 ]
