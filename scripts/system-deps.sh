#!/bin/sh
# Install the Debian packages the test suite needs (headless Chromium for the review app's
# browser tests, PostgreSQL for the queue's concurrency test). Idempotent: installs only
# what is missing, runs `apt-get update` at most once, and says what it did.
set -eu

PACKAGES="chromium postgresql"
missing=""
for pkg in $PACKAGES; do
    if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        echo "system-deps: $pkg already installed"
    else
        missing="$missing $pkg"
    fi
done

if [ -z "$missing" ]; then
    echo "system-deps: nothing to do"
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "system-deps: missing Debian packages:$missing" >&2
    echo "system-deps: run as root (e.g. sudo sh scripts/system-deps.sh) or install them yourself" >&2
    exit 1
fi

echo "system-deps: apt-get update"
apt-get update -q
echo "system-deps: apt-get install -y$missing"
DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing
echo "system-deps: installed$missing"
