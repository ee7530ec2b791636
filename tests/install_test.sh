#!/usr/bin/env bash
# `make install` and `make deb` on this machine, without touching the system: install into a
# DESTDIR, build the .deb with CPack and unpack it with dpkg -x; run each installed binary, check
# the man page and the bash completion are where they belong.
#   tests/install_test.sh BUILD_DIR VERSION
set -u
build="$(realpath "$1")" version="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
pass=0 fail=0
check() {  # check DESCRIPTION COMMAND...
  local desc="$1"; shift
  if "$@" >/dev/null 2>"$work/err"; then pass=$((pass+1)); else echo "FAIL: $desc: $(head -c 300 "$work/err")"; fail=$((fail+1)); fi
}

DESTDIR="$work/dest" cmake --install "$build" --prefix /opt/infralens >/dev/null 2>"$work/err" ||
  { echo "FAIL: cmake --install: $(cat "$work/err")"; fail=$((fail+1)); }
check "installed binary runs" "$work/dest/opt/infralens/bin/infralens" --version
check "installed binary says its version" grep -q "$version" <("$work/dest/opt/infralens/bin/infralens" --version)
man="$work/dest/opt/infralens/share/man/man1/infralens.1.gz"
check "man page installed, gzip'd (Debian policy 12.1)" gzip -t "$man"
check "man page names every command" grep -q "COMMAND: schedule" <(gzip -dc "$man")
check "bash completion installed" test -s "$work/dest/opt/infralens/share/bash-completion/completions/infralens"
check "copyright file installed (Debian policy 12.5)" grep -q "^License: Apache-2.0" "$work/dest/opt/infralens/share/doc/infralens/copyright"
# The completion lists every command: load it and complete "infralens " with the installed binary.
check "completion completes commands" bash -c "
  PATH='$work/dest/opt/infralens/bin':\$PATH
  source '$work/dest/opt/infralens/share/bash-completion/completions/infralens'
  COMP_WORDS=(infralens ''); COMP_CWORD=1; _infralens
  for c in schedule compare plan validate serve; do printf '%s\n' \"\${COMPREPLY[@]}\" | grep -qx \"\$c\" || exit 1; done"
# ... a group's subcommands, a subcommand's flags, and preset names as flag values.
complete_has() {  # complete_has WANT WORDS...: the completion of the last word offers WANT
  local want="$1"; shift
  bash -c "
    PATH='$work/dest/opt/infralens/bin':\$PATH
    source '$work/dest/opt/infralens/share/bash-completion/completions/infralens'
    COMP_WORDS=($*); COMP_CWORD=$(($# - 1)); _infralens
    printf '%s\n' \"\${COMPREPLY[@]}\" | grep -qx -- '$want'"
}
check "completion completes trace subcommands" complete_has calibrate infralens trace cal
check "completion completes a subcommand's flags" complete_has --gpu infralens trace calibrate --gp
check "completion completes model presets" complete_has llama3-70b infralens plan --model llama3-7
check "completion completes cluster presets" complete_has dgx-h100 infralens memory --cluster dgx-h
check "completion completes schedules" complete_has interleaved-1f1b infralens schedule -s inter

(cd "$work" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/pkg" >/dev/null 2>"$work/err") ||
  { echo "FAIL: cpack: $(tail -5 "$work/err")"; fail=$((fail+1)); }
deb=$(ls "$work"/pkg/infralens_*.deb 2>/dev/null | head -1)
check "a .deb was built" test -n "$deb"
if [ -n "$deb" ]; then
  check "the .deb declares its dependencies" grep -q "libfmt9" <(dpkg-deb -f "$deb" Depends)
  dpkg -x "$deb" "$work/root"
  check "the packaged binary runs" "$work/root/usr/bin/infralens" --version
  check "the packaged binary validates" "$work/root/usr/bin/infralens" validate
  dpkg-deb -c "$deb" > "$work/contents"
  check "the .deb ships its copyright file" grep -q "usr/share/doc/infralens/copyright" "$work/contents"
  check "the .deb ships a gzip'd man page" grep -q "usr/share/man/man1/infralens.1.gz" "$work/contents"
  # Debian policy 12.7: a native package's changelog, gzip'd, its latest entry this version.
  check "the .deb ships its changelog (Debian policy 12.7)" gzip -t "$work/root/usr/share/doc/infralens/changelog.gz"
  check "the changelog's latest entry is this version" grep -q "^infralens ($version) " \
    <(gzip -dc "$work/root/usr/share/doc/infralens/changelog.gz" | head -1)
  # Policy 10.9: files owned by root, none writable by group or others; 10.1: binaries stripped.
  check "every file in the .deb is root's and not group/world-writable" \
    test -z "$(awk '$2 != "root/root" || substr($1, 6, 1) == "w" || substr($1, 9, 1) == "w"' "$work/contents")"
  check "the packaged binary is stripped" grep -q ", stripped" <(file "$work/root/usr/bin/infralens")
  check "the .deb has an extended description" test "$(dpkg-deb -f "$deb" Description | wc -l)" -gt 1
  # Installed for real with dpkg -i, into a private root with its own (empty) package database,
  # so the system is untouched: the dependencies are not there, hence --force-depends.
  mkdir -p "$work/sys/var/lib/dpkg/info" "$work/sys/var/lib/dpkg/updates"
  touch "$work/sys/var/lib/dpkg/status"
  check "dpkg -i installs the .deb" dpkg --root="$work/sys" --force-depends --force-not-root \
    --force-script-chrootless --log=/dev/null -i "$deb"
  check "dpkg lists it installed" grep -q "^Status: install ok installed" "$work/sys/var/lib/dpkg/status"
  check "the dpkg-installed binary runs" "$work/sys/usr/bin/infralens" --version
  # The Python module (when built) on Debian's path for python3 packages.
  if [ -d "$build/python/infralens" ]; then
    check "the packaged Python module imports" env -u PYTHONHOME \
      PYTHONPATH="$work/root/usr/lib/python3/dist-packages" /usr/bin/python3 -c \
      "import infralens; assert infralens.memory(model='llama3-8b', cluster='dgx-h100', gpus=8)['ranks']"
  fi
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
