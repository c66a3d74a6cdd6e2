#!/usr/bin/env bash
# Installs Debian's prometheus package (prometheus + promtool) for the live integration test
# and `make demo-live`, when it is missing and this user may install packages. Never fails:
# without it the live test skips, except under CI, where it fails and says why.
set -u
have() { command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; }
have && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  echo "installing Debian's prometheus package for the live integration test..." >&2
  apt-get install -y -q --no-install-recommends prometheus >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q --no-install-recommends prometheus >/dev/null 2>&1; }
fi
have || echo "note: prometheus is not installed; the live integration test will skip (and fail under CI)" >&2
exit 0
