#!/usr/bin/env bash
# Print the path of a Python >= 3.12 that actually runs, or explain what to install.
# Looks at $PYTHON, then python3.14 .. python3.12 and python3 on PATH, then every
# interpreter installed through pyenv (whether or not it is the active version).
set -u
ok() {  # ok CMD -> prints absolute interpreter path if CMD is a working Python >= 3.12
    "$@" -c 'import sys, venv; assert sys.version_info >= (3, 12); print(sys.executable)' 2>/dev/null
}
candidates=()
[ -n "${PYTHON:-}" ] && candidates+=("$PYTHON")
for v in 3.12 3.13 3.14; do candidates+=("python$v"); done
candidates+=("python3")
root="$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")"
for d in $(ls -d "$root"/versions/3.1[2-9]* 2>/dev/null | sort -V); do
    candidates+=("$d/bin/python3")
done
for c in "${candidates[@]}"; do
    if path="$(ok "$c")" && [ -n "$path" ]; then echo "$path"; exit 0; fi
    # a pyenv shim that exists but is not the active version: try it through pyenv
    if command -v pyenv >/dev/null 2>&1 && [[ "$c" == python3.1* ]]; then
        for ver in $(pyenv versions --bare 2>/dev/null | grep -E "^${c#python}(\.|$)" | sort -V); do
            if path="$(PYENV_VERSION="$ver" ok "$c")" && [ -n "$path" ]; then echo "$path"; exit 0; fi
        done
    fi
done
cat >&2 <<'MSG'
error: pymc_bnn needs Python >= 3.12 (PyMC 6 requires it), and none was found.
Looked at: $PYTHON, python3.12, python3.13, python3.14, python3 on PATH, and pyenv versions.
Install one, e.g.:  pyenv install 3.12  (or: apt-get install python3.12 python3.12-venv)
or point to it:     make test PYTHON=/path/to/python3.12
MSG
exit 1
