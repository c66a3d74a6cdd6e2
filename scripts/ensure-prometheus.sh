#!/usr/bin/env bash
# Installs Debian's prometheus and prometheus-alertmanager packages (prometheus, promtool,
# alertmanager) for the live integration tests and `make demo-live`, when they are missing and
# this user may install packages. Never fails: without them the live tests skip, except under
# CI, where they fail and say why.
set -u
have() { command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1 \
  && { command -v alertmanager >/dev/null 2>&1 || [ -x /usr/bin/prometheus-alertmanager ]; }; }
have && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  echo "installing Debian's prometheus and prometheus-alertmanager packages for the live integration tests..." >&2
  apt-get install -y -q --no-install-recommends prometheus prometheus-alertmanager >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null 2>&1 \
         && apt-get install -y -q --no-install-recommends prometheus prometheus-alertmanager >/dev/null 2>&1; }
fi
have || echo "note: prometheus or alertmanager is not installed; the live tests will skip (and fail under CI)" >&2
exit 0
