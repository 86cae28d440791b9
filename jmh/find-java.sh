# Sourced by the scripts in jmh/: sets JAVA to a JDK >= 22 and exports its JAVA_HOME.
# JAVA_HOME wins when it is new enough; otherwise the newest JDK found on the PATH or in the
# usual install directories.

java_feature() { "$1" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p' | head -1; }

find_java() {
  local candidates=() c v best="" bestv=0
  [[ -n "${JAVA_HOME:-}" ]] && candidates+=("$JAVA_HOME/bin/java")
  command -v java >/dev/null 2>&1 && candidates+=("$(command -v java)")
  for c in /usr/lib/jvm/*/bin/java /opt/java/*/bin/java "$HOME"/.jdks/*/bin/java "$HOME"/.sdkman/candidates/java/*/bin/java; do
    [[ -x "$c" ]] && candidates+=("$c")
  done
  for c in "${candidates[@]}"; do
    v="$(java_feature "$c")"; v="${v%%.*}"
    [[ "$v" =~ ^[0-9]+$ ]] || continue
    if [[ -n "${JAVA_HOME:-}" && "$c" == "$JAVA_HOME/bin/java" && "$v" -ge 22 ]]; then echo "$c"; return; fi
    if [[ "$v" -gt "$bestv" ]]; then best="$c"; bestv="$v"; fi
  done
  [[ "$bestv" -ge 22 ]] || { echo "no JDK >= 22 found (set JAVA_HOME)" >&2; exit 1; }
  echo "$best"
}

JAVA="$(find_java)"
export JAVA_HOME="$(cd "$(dirname "$JAVA")/.." && pwd)"
