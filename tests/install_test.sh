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
check "man page installed" test -s "$work/dest/opt/infralens/share/man/man1/infralens.1"
check "man page names every command" grep -q "COMMAND: schedule" "$work/dest/opt/infralens/share/man/man1/infralens.1"
check "bash completion installed" test -s "$work/dest/opt/infralens/share/bash-completion/completions/infralens"
check "licence installed" test -s "$work/dest/opt/infralens/share/doc/infralens/LICENSE"
# The completion lists every command: load it and complete "infralens " with the installed binary.
check "completion completes commands" bash -c "
  PATH='$work/dest/opt/infralens/bin':\$PATH
  source '$work/dest/opt/infralens/share/bash-completion/completions/infralens'
  COMP_WORDS=(infralens ''); COMP_CWORD=1; _infralens
  for c in schedule compare plan validate serve; do printf '%s\n' \"\${COMPREPLY[@]}\" | grep -qx \"\$c\" || exit 1; done"

(cd "$work" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/pkg" >/dev/null 2>"$work/err") ||
  { echo "FAIL: cpack: $(tail -5 "$work/err")"; fail=$((fail+1)); }
deb=$(ls "$work"/pkg/infralens_*.deb 2>/dev/null | head -1)
check "a .deb was built" test -n "$deb"
if [ -n "$deb" ]; then
  check "the .deb declares its dependencies" grep -q "libfmt9" <(dpkg-deb -f "$deb" Depends)
  dpkg -x "$deb" "$work/root"
  check "the packaged binary runs" "$work/root/usr/bin/infralens" --version
  check "the packaged binary validates" "$work/root/usr/bin/infralens" validate
  # The Python module (when built) on Debian's path for python3 packages.
  if [ -d "$build/python/infralens" ]; then
    check "the packaged Python module imports" env -u PYTHONHOME \
      PYTHONPATH="$work/root/usr/lib/python3/dist-packages" /usr/bin/python3 -c \
      "import infralens; assert infralens.memory(model='llama3-8b', cluster='dgx-h100', gpus=8)['ranks']"
  fi
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
