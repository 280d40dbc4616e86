# Doxygen INPUT_FILTER for include/hrmt.h (see docs/Doxyfile.in). The header documents every
# declaration with plain C comments; this turns them into Doxygen comments on the fly, so the
# header keeps one comment style and the HTML still carries the text:
#   - the file's opening comment            -> the @file page
#   - a boxed section title (/* ---- */)     -> a @name member group
#   - a comment starting a line              -> documents what follows  (/** ... */)
#   - a comment after code on the same line  -> documents that member   (/**< ... */)
# Comments already in Doxygen form (/** /*! /// //!) pass through unchanged. POSIX awk (mawk).

function is_ruler(s) { return s ~ /^\/\* -+ \*\/[ \t]*$/ }
function box_text(s) {
    sub(/^\/\*[ \t]*/, "", s)
    sub(/[ \t]*\*\/[ \t]*$/, "", s)
    return s
}

BEGIN { in_comment = 0; in_box = 0; group_open = 0; first = 1 }

{
    line = $0

    if (in_comment) {
        print line
        if (index(line, "*/")) in_comment = 0
        next
    }

    # Box lines are rewritten one for one, so doxygen's warnings keep hrmt.h's line numbers.
    if (in_box) {
        if (is_ruler(line)) {
            in_box = 0
            print (pending != "" ? " * " pending " " : " ") "*/ /** @{ */"
            group_open = 1
        } else {
            t = box_text(line)
            if (nlines++ == 0) {
                # "Ops (fused kernels). Rows = ..." -> title "Ops (fused kernels)", rest described.
                d = index(t, ". ")
                if (d > 0) { pending = substr(t, d + 2); t = substr(t, 1, d - 1) }
                print "/** @name " t
            } else {
                print " * " (pending != "" ? pending " " : "") t
                pending = ""
            }
        }
        next
    }

    if (is_ruler(line)) {
        in_box = 1; nlines = 0; pending = ""
        print (group_open ? "/** @} */" : "")
        group_open = 0
        next
    }

    # The opening comment of the file becomes the @file block.
    if (first && line ~ /^\/\*[ \t]*$/) {
        first = 0
        print "/** @file"
        in_comment = 1
        next
    }
    if (line !~ /^[ \t]*$/) first = 0

    # Preprocessor lines keep their comments (`#endif /* HRMT_H */`).
    if (line ~ /^[ \t]*#/) { print line; next }

    # A comment that starts the line documents the declaration below it.
    if (line ~ /^[ \t]*\/\*[^*!]/ || line ~ /^[ \t]*\/\*$/) {
        sub(/\/\*/, "/**", line)
        print line
        if (!index(substr(line, index(line, "/**") + 3), "*/")) in_comment = 1
        next
    }

    # A comment after code documents that member or enumerator.
    p = index(line, "/*")
    if (p > 1 && substr(line, p + 2, 1) != "*" && substr(line, p + 2, 1) != "!" &&
        substr(line, 1, p - 1) ~ /[^ \t]/) {
        line = substr(line, 1, p - 1) "/**<" substr(line, p + 2)
        print line
        if (!index(substr(line, p + 4), "*/")) in_comment = 1
        next
    }

    print line
}

END { if (group_open) print "/** @} */" }
