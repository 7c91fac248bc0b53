#!/usr/bin/env bash
# Installs the browser serve's web-page test runs (tests/all/serve.rs,
# `a_page_in_a_real_browser_starts_no_run_and_reads_nothing`): Debian's
# `chromium`, from the machine's own apt sources, unless one is already on
# PATH. Prints the version.
#
# Not pinned to a version: Debian keeps only its newest security build of
# chromium in the archive, so a pin would stop installing at its next
# update. The test asks nothing of the browser but what every browser does
# (a page's cross-origin `fetch`), and the version is printed for the record.
set -euo pipefail

if ! command -v chromium >/dev/null; then
    command -v apt-get >/dev/null \
        || { echo "tests/browser/setup.sh: no chromium and no apt-get; install Chromium and set HOOKBOX_CHROMIUM" >&2; exit 1; }
    sudo=()
    [[ "$(id -u)" == 0 ]] || sudo=(sudo -n)
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update -qq >/dev/null
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
# Debian's wrapper script warns on stderr about its own memory check.
chromium --version 2>/dev/null
