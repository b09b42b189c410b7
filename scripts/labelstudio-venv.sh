#!/bin/bash
# Create the Label Studio virtual environment the Label Studio round-trip test runs its server
# from. Label Studio pins Django, pydantic and many others against ours, so it gets its own
# venv (default .venv-labelstudio, gitignored). Idempotent: a stamp holding the pinned version
# marks a finished install; a half-finished one is removed and redone. Exits non-zero with a
# message naming the step that failed.
set -euo pipefail

LS_VERSION="${LABEL_STUDIO_VERSION:-1.23.2}"
DIR="${1:-.venv-labelstudio}"
PYTHON="${PYTHON:-python3.11}"
STAMP="$DIR/.labelstudio-stamp"
# The releases the tests passed with (scripts/labelstudio-constraints.txt), for the version they
# pin; another LABEL_STUDIO_VERSION, or LABEL_STUDIO_CONSTRAINTS=none, resolves freely. The stamp
# holds the file's hash too, so a refreshed file rebuilds the venv.
CONSTRAINTS="${LABEL_STUDIO_CONSTRAINTS:-$(cd "$(dirname "$0")" && pwd)/labelstudio-constraints.txt}"
PIN_ARGS=()
WANT="$LS_VERSION"
if [ "$CONSTRAINTS" != none ] && grep -qx "label-studio==$LS_VERSION" "$CONSTRAINTS"; then
    PIN_ARGS=(-c "$CONSTRAINTS")
    WANT="$LS_VERSION $(sha256sum <"$CONSTRAINTS" | cut -c1-16)"
fi

# One install at a time (two test sessions, or `make -j`): the second waits, then finds it done.
mkdir -p "$(dirname "$DIR")"
exec 9>"$DIR.lock"
flock 9

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && [ -x "$DIR/bin/label-studio" ]; then
    echo "labelstudio-venv: label-studio $LS_VERSION already in $DIR"
    exit 0
fi
command -v "$PYTHON" >/dev/null || { echo "labelstudio-venv: need $PYTHON (Python 3.11) to create $DIR" >&2; exit 1; }
rm -rf "$DIR"
start=$(date +%s)
"$PYTHON" -m venv "$DIR" || { echo "labelstudio-venv: '$PYTHON -m venv $DIR' failed" >&2; exit 1; }
DIR="$(cd "$DIR" && pwd)"
# uv links wheels from its cache in seconds where pip unpacks them for minutes; pip is the fallback.
UV="$(command -v uv || true)"
[ -z "$UV" ] && [ -x .venv/bin/uv ] && UV=.venv/bin/uv
if [ -n "$UV" ] && "$UV" pip install --quiet --python "$DIR/bin/python" "${PIN_ARGS[@]}" "label-studio==$LS_VERSION"; then
    :
elif "$DIR/bin/python" -m pip install --quiet "${PIN_ARGS[@]}" "label-studio==$LS_VERSION"; then
    :
else
    echo "labelstudio-venv: installing label-studio==$LS_VERSION into $DIR failed (needs PyPI)" >&2
    rm -rf "$DIR"
    exit 1
fi
# Import only: `label-studio --version` would create a database under ~/.local and ask PyPI.
"$DIR/bin/python" -c "import label_studio, sys; sys.exit(label_studio.__version__ != '$LS_VERSION')" \
    || { echo "labelstudio-venv: label_studio $LS_VERSION does not import from $DIR" >&2; exit 1; }
installed=$(date +%s)
# An empty, migrated database in $DIR/template: each test server starts from a copy (about a
# minute less per start than migrating a new one). HOME and the data dir point into the
# venv so nothing is written under ~/.local; no version check or analytics call goes out.
TEMPLATE="$DIR/template"
mkdir -p "$TEMPLATE"
( cd "$TEMPLATE" && env -u PYTHONPATH HOME="$PWD" LABEL_STUDIO_BASE_DATA_DIR="$PWD" LATEST_VERSION_CHECK=false COLLECT_ANALYTICS=false \
    "$DIR/bin/python" "$(echo "$DIR"/lib/python3*/site-packages/label_studio/manage.py)" migrate -v0 >migrate.log 2>&1 ) \
    && [ -f "$TEMPLATE/label_studio.sqlite3" ] \
    || { echo "labelstudio-venv: Label Studio's migrate failed; its output:" >&2; tail -40 "$TEMPLATE/migrate.log" >&2; exit 1; }
echo "$WANT" > "$STAMP"
echo "labelstudio-venv: label-studio $LS_VERSION installed in $DIR in $(( installed - start )) s, database migrated in $(( $(date +%s) - installed )) s"
