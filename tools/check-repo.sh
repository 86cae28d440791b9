#!/usr/bin/env bash
# Repository checks run by `./mvnw -B verify` (the root project, phase verify) and so by .ci/run:
#   check-process-words.sh  no words about the development process in any tracked text file;
#   check-links.py          every relative link and #anchor in README.md and docs/**/*.md resolves.
# Both run even when the first fails, so one run lists every hit (file:line).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

status=0
bash tools/check-process-words.sh || status=1
if command -v python3 >/dev/null; then
  python3 tools/check-links.py || status=1
else
  echo "check-repo: python3 is needed for tools/check-links.py and was not found on the PATH" >&2
  status=1
fi
exit $status
