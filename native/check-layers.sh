#!/bin/sh
# check-layers.sh OBJDIR FILE... — fails if a file of the native core calls
# (or reads data of) a file that is not below it. FILEs are the core's
# sources, bottom layer first (the Makefile's LAYERS); OBJDIR holds their
# objects, one per source, named after it (os.c -> OBJDIR/os.o). Symbols
# come from nm, so inline functions of the headers count where they are
# expanded. docs/native-core.md, "Layers", explains the order.
set -eu
dir=$1
shift
defs=$(mktemp)
trap 'rm -f "$defs"' EXIT
rank=0
for f in "$@"; do
    rank=$((rank + 1))
    o=$dir/$(basename "$f" .c).o
    nm --defined-only "$o" | awk -v r=$rank -v f="$f" '$2 ~ /^[TDBRV]$/ {print $3, r, f}' >>"$defs"
done
bad=0
rank=0
for f in "$@"; do
    rank=$((rank + 1))
    o=$dir/$(basename "$f" .c).o
    for sym in $(nm -u "$o" | awk '{print $2}'); do
        hit=$(awk -v s="$sym" '$1 == s {print $2, $3; exit}' "$defs")
        [ -n "$hit" ] || continue
        r=${hit% *}
        if [ "$r" -ge "$rank" ]; then
            echo "layering: $f uses $sym of ${hit#* }, which is not below it" >&2
            bad=1
        fi
    done
done
[ $bad -eq 0 ] && echo "  layers ok: $*"
exit $bad
