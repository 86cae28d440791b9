#!/usr/bin/env bash
# Fails when a tracked text file speaks of how the code was developed instead of what it is:
# the words "session", "stop N" and "issue N" (any case). Prints file:line: text for every hit.
#
# The repository describes the product: docs in the present tense, a date only where it labels
# a measurement, a dropped lever as an entry in docs/decisions.md.
#
# Allow-list: ALLOWED below, one extended regular expression per legitimate use, matched
# against "file:line:text". Keep it short and explain each entry.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

pattern='\bsessions?\b|\bstops? [0-9]+\b|\bissues? #?[0-9]+\b'

ALLOWED=(
  # this check names the words it looks for
  '^tools/check-process-words\.sh:'
)

# grep's exit status: 0 hits, 1 none, anything else an error (which must not pass as "none")
rc=0
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  # tracked and new (not ignored) files; -I skips binary files
  hits=$(git grep -n -I -i -E --untracked "$pattern" -- .) || rc=$?
else
  hits=$(grep -r -n -I -i -E --exclude-dir=target --exclude-dir=build --exclude-dir=.git \
           "$pattern" .) || rc=$?
  hits=$(sed 's|^\./||' <<<"$hits")
fi
if (( rc > 1 )); then
  echo "check-process-words: the search itself failed (exit $rc)" >&2
  exit 2
fi
[[ -n "$hits" ]] || hits=

for allowed in "${ALLOWED[@]}"; do
  [[ -z "$hits" ]] && break
  hits=$(grep -v -E -- "$allowed" <<<"$hits" || true)
done

if [[ -n "$hits" ]]; then
  printf '%s\n' "$hits"
  count=$(wc -l <<<"$hits")
  echo "check-process-words: $count line(s) speak of the development process (\"session\", \"stop N\", \"issue N\");" >&2
  echo "  say what the code or the measurement is instead (a dropped lever goes to docs/decisions.md)" >&2
  exit 1
fi
echo "check-process-words: no process words"
