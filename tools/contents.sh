#!/bin/sh
# tools/contents.sh - the contents block at the top of each header, made
# from the header itself: its section banners (lines "/* ---- >>tag title */"
# before the end of its declarations) and the public functions declared
# under each (ELEC_API declarations, and the inline functions and C++
# templates of public names: elec_, not elec__).
#
#   tools/contents.sh FILE            prints FILE's contents block
#   tools/contents.sh --write FILE... rewrites each file's block in place
#   tools/contents.sh --check FILE... exit status 1, naming each file whose
#                                     block is stale (make test runs it)
#   tools/contents.sh --quickstart FILE  prints the code of FILE's quick start
#
# The block sits in the header's top comment between a line that starts
# "   Contents" and the line "   (end of contents)"; the quick start is the
# block of lines indented by seven spaces after the line that starts
# "   Quick start", up to the first blank line.  POSIX sh and awk.
set -u

# contents FILE: the generated block, without its two marker lines
contents() {
    awk '
    function flush(   i, line, out) {
        if (tag == "") return
        printf "     >>%-8s %s\n", tag, title
        line = "                "
        out = 0
        for (i = 1; i <= count; i++) {
            if (length(line) + length(name[i]) + 1 > 79 && out) {
                print line
                line = "                "
                out = 0
            }
            line = line (out ? " " : "") name[i]
            out = 1
        }
        if (out) print line
        count = 0
    }
    /^   \(end of contents\)/ { skipping = 0; next }
    /^   Contents/ { skipping = 1; next }
    skipping { next }
    /^#endif \/\* ELEC_(H|CPU_H|CUDA_CUH) \*\/$/ { flush(); exit }
    /^\/\* -+ >>[a-z]+ .* \*\/$/ {
        flush()
        match($0, />>[a-z]+ /)
        tag = substr($0, RSTART + 2, RLENGTH - 3)
        title = substr($0, RSTART + RLENGTH)
        sub(/ \*\/$/, "", title)
        next
    }
    /^ELEC_API / ||
    /^(ELEC_HD |static |inline |__device__ |__forceinline__ |template <[^>]*> )+.*[ *]elec_[A-Za-z0-9]/ {
        if (!match($0, /elec_[A-Za-z0-9_]*\(/)) next
        n = substr($0, RSTART, RLENGTH - 1)
        if (n ~ /^elec__/) next
        for (i = 1; i <= count; i++) if (name[i] == n) next
        name[++count] = n
    }
    ' "$1"
}

# quickstart FILE: the quick start's code, its indentation removed
quickstart() {
    awk '
    /^   Quick start/ { on = 1; next }
    on && /^$/ { if (seen) exit; next }
    on && /^       / { seen = 1; print substr($0, 8); next }
    on && seen { exit }
    ' "$1"
}

# block FILE: the block as it stands in FILE, without its marker lines
block() {
    awk '/^   \(end of contents\)/ { exit } on { print } /^   Contents/ { on = 1 }' "$1"
}

mode=print
case ${1:-} in
--write) mode=write; shift ;;
--check) mode=check; shift ;;
--quickstart) quickstart "$2"; exit ;;
-*|"") sed -n '2,20s/^# \{0,1\}//p' "$0"; exit 2 ;;
esac
status=0
for file in "$@"; do
    if ! grep -q '^   Contents' "$file" || ! grep -q '^   (end of contents)' "$file"; then
        echo "$file: no contents block (a line starting \"   Contents\" and one \"   (end of contents)\")" >&2
        status=1
        continue
    fi
    case $mode in
    print) contents "$file" ;;
    check)
        if [ "$(contents "$file")" != "$(block "$file")" ]; then
            echo "$file: its contents block is stale: run tools/contents.sh --write $file" >&2
            status=1
        fi
        ;;
    write)
        new=$(contents "$file")
        tmp="$file.contents.tmp"
        awk -v new="$new" '
        /^   \(end of contents\)/ { print new; on = 0 }
        on { next }
        { print }
        /^   Contents/ { on = 1 }
        ' "$file" > "$tmp" && mv "$tmp" "$file" || { rm -f "$tmp"; status=1; }
        ;;
    esac
done
exit $status
