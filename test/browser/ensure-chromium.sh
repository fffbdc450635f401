#!/bin/sh
# The browser test drives Debian's chromium package through playwright-core. On a fresh
# machine (CI) it is not there yet: install it. Needs root, or sudo without a password.
set -eu
CHROMIUM="${CHROMIUM_PATH:-/usr/bin/chromium}"
if [ -x "$CHROMIUM" ]; then
  exit 0
fi
echo "ensure-chromium: $CHROMIUM not found, installing Debian's chromium package" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq chromium >/dev/null
if [ ! -x "$CHROMIUM" ]; then
  echo "ensure-chromium: installed chromium, but $CHROMIUM is still missing" >&2
  exit 1
fi
