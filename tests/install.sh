#!/bin/sh
# install.sh BUILD_DIR SOURCE_DIR CC [CFLAGS] - `cmake --install` into a DESTDIR puts every file in
# place, the installed command runs, and the installed pkg-config file builds and links a small
# program against the installed library and header, which then scans a fixture.
set -u
build=$1 src=$2 cc=$3 cflags=${4:-}
. "$(dirname "$0")/testlib.sh"

DESTDIR="$t/root" cmake --install "$build" --prefix /usr > "$t/log" 2>&1 || { cat "$t/log"; bad "cmake --install failed"; }
r="$t/root/usr"
pc=$(find "$r" -name oomscan.pc | head -n 1)
lib=$(find "$r" -name liboomscan.a | head -n 1)
for f in bin/oomscan include/oomscan.h include/oomscan_status.h share/man/man1/oomscan.1 \
         share/bash-completion/completions/oomscan share/doc/oomscan/examples/slurm-epilog.sh \
         share/doc/oomscan/examples/ticket-github.sh share/doc/oomscan/ticketing.md; do
  [ -s "$r/$f" ] && ok || bad "not installed: $f"
done
[ -n "$lib" ] && ok || bad "not installed: liboomscan.a"
[ -n "$pc" ] && ok || bad "not installed: oomscan.pc"
# every page cited (docs/PAGE is DOCDIR/PAGE) by the installed README, man page and pages, and every
# checklist's remediation.doc, is installed (issue 17: tickets and the man page cited missing pages)
d="$r/share/doc/oomscan"
{ cat "$r/share/man/man1/oomscan.1" "$d"/*.md "$d"/remediation/*.md | sed 's/\\-/-/g' |
    grep -oE '(^|[^:/A-Za-z0-9_.-])docs/[a-z0-9_./-]*[a-z0-9_/]' | sed 's|^[^d]||' | grep -vx 'docs/oomscan.1'
  "$r/bin/oomscan" --explain list | sed 's|.*|docs/remediation/&.md|'
} | sort -u > "$t/cited" # docs/oomscan.1 is the man page, checked above
[ "$(grep -c remediation/ "$t/cited")" -ge 10 ] && ok || bad "few remediation pages cited: $(wc -l < "$t/cited")"
while IFS= read -r c; do
  [ -e "$d/${c#docs/}" ] && ok || bad "cited but not installed: $c"
done < "$t/cited"
sed 's/\\-/-/g' "$r/share/man/man1/oomscan.1" | grep -o '/usr/share/doc/oomscan/[a-z0-9_./-]*' | sort -u > "$t/man_paths"
while IFS= read -r c; do
  [ -e "$t/root$c" ] && ok || bad "the man page names $c, not installed"
done < "$t/man_paths"
[ -x "$r/bin/oomscan" ] && [ -x "$r/share/doc/oomscan/examples/slurm-epilog.sh" ] && ok || bad "installed scripts not executable"
version=$("$r/bin/oomscan" --version | cut -d' ' -f2)
[ -n "$version" ] && ok || bad "the installed oomscan does not run"

# pkg-config: the version, and a program built only from what it says
export PKG_CONFIG_PATH="${pc%/*}"
[ "$(pkg-config --modversion oomscan)" = "$version" ] && ok || bad "pkg-config version is not $version"
cat > "$t/count.c" <<'EOC'
#include <oomscan.h>
#include <stdio.h>

/* count FILE: prints how many findings the library makes of FILE */
int main(int argc, char **argv)
{
    oomscan_diag d = {0};
    oomscan_db *db = NULL;
    oomscan_scan *s = NULL;
    if (argc != 2 || oomscan_db_new(&db, &d) || oomscan_db_compile(db, &d) || oomscan_scan_new(&s, db, NULL, &d) ||
        oomscan_scan_paths(s, (const char *const *)argv + 1, 1, &d)) {
        fprintf(stderr, "count: %s\n", d.msg);
        return 2;
    }
    printf("%zu\n", oomscan_scan_finding_count(s));
    oomscan_scan_free(s);
    oomscan_db_free(db);
    return 0;
}
EOC
# shellcheck disable=SC2046,SC2086
"$cc" -std=c11 -Wall -Werror $cflags -o "$t/count" "$t/count.c" $(pkg-config --cflags --libs oomscan) 2> "$t/cc.err" &&
  ok || { cat "$t/cc.err"; bad "a program does not build from pkg-config --cflags --libs oomscan"; }
n=$("$t/count" "$src/fixtures/golden/verl-log-prob-oom.log" 2>&1)
[ "$n" = 1 ] && ok || bad "the program linked against liboomscan.a counted '$n' findings, want 1"
# the installed archive defines no global symbol but the public API's (issue 34): nothing internal to
# link against, nothing to clash with a user's own names
others=$(nm -g --defined-only "$lib" 2>/dev/null | awk 'NF == 3 && $3 !~ /^oomscan_/ { print $3 }' | head -n 5)
ndef=$(nm -g --defined-only "$lib" 2>/dev/null | awk 'NF == 3' | wc -l)
[ -z "$others" ] && [ "$ndef" -ge 20 ] && ok || bad "liboomscan.a exports more than oomscan_* ($ndef defined): $others"
inc=$(pkg-config --cflags-only-I oomscan | tr ' ' '\n' | sed -n 's/^-I//p' | head -n 1)
[ -f "$inc/oomscan.h" ] && case $(cd "$inc" && pwd -P) in "$t"/*) true ;; *) false ;; esac && ok ||
  bad "Cflags do not point into the install: $(pkg-config --cflags oomscan)"

finish install
