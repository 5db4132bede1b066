#!/usr/bin/env bash
# Creates (or reuses) the project's Bumble venv at $REPO/.venv-bumble with the pinned Bumble version.
set -euo pipefail
repo="$(git -C "$(dirname "$0")" rev-parse --show-toplevel 2>/dev/null || (cd "$(dirname "$0")/../.." && pwd))"
venv="$repo/.venv-bumble"
version="0.0.236"
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import bumble, importlib.metadata as m; assert m.version('bumble') == '$version'" 2>/dev/null; then
    exit 0
fi
echo "installing bumble==$version into $venv" >&2
python3 -m venv "$venv"
if ! "$venv/bin/pip" install --quiet "bumble==$version" > "$repo/.venv-bumble.log" 2>&1; then
    cat "$repo/.venv-bumble.log" >&2
    echo "pip install bumble==$version failed" >&2
    exit 1
fi
