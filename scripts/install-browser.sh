#!/usr/bin/env bash
# Installs Debian's Chromium and ChromeDriver, for the web page's browser
# tests (tests/it/browser.rs); run by test.sh, safe to run again. Without
# them those tests skip and say why.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
  exit 0
fi
echo "memd tests: installing chromium and chromium-driver (the web page's browser tests)" >&2
if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
$sudo apt-get update -qq
$sudo apt-get install -y -qq chromium chromium-driver >/dev/null
