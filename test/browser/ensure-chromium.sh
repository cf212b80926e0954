#!/usr/bin/env bash
# The browser tests drive Debian's Chromium (headless). Installs it when missing: as
# root with apt-get (CI runs as root on a fresh Debian machine), else says what to run.
set -euo pipefail
for c in "${CHROMIUM_PATH:-}" /usr/bin/chromium /usr/bin/chromium-browser; do
  if [ -n "$c" ] && [ -x "$c" ]; then exit 0; fi
done
if [ "$(id -u)" -ne 0 ]; then
  echo "ensure-chromium: Chromium is missing; run: sudo apt-get install -y chromium (or set CHROMIUM_PATH)" >&2
  exit 1
fi
echo "ensure-chromium: installing Debian's chromium for the browser tests" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
