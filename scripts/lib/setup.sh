# Shared set-up for ./scripts/serve and ./scripts/test. Sourced, not run.
# Installs what is missing: Debian packages (when root), the virtual environment, models.

PYTHON="${PYTHON:-python3}"
VENV="${VENV:-.venv}"

log() { printf '\033[1m[setup]\033[0m %s\n' "$*" >&2; }

# ensure_debian_packages REQUIRED|OPTIONAL PKG...
ensure_debian_packages() {
    local need="$1"; shift
    local missing=()
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        log "installing Debian packages: ${missing[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    elif [ "$need" = REQUIRED ]; then
        log "missing Debian packages: ${missing[*]}"
        log "install them with: sudo apt-get install ${missing[*]}"
        exit 1
    else
        log "optional Debian packages missing (some features off): ${missing[*]}"
        log "install them with: sudo apt-get install ${missing[*]}"
    fi
}

# ensure_venv EXTRAS: create .venv if missing; pip-install the project when pyproject changed.
ensure_venv() {
    local extras="$1"
    if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
        log "Python 3.11 or newer is needed (found: $("$PYTHON" --version 2>&1)); set PYTHON=..."
        exit 1
    fi
    if [ ! -x "$VENV/bin/python" ]; then
        log "creating $VENV"
        "$PYTHON" -m venv "$VENV"
    fi
    local stamp="$VENV/.installed-$extras"
    local want
    want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
        log "installing Python packages into $VENV (extras: ${extras:-none})"
        "$VENV/bin/python" -m pip install -q --upgrade pip
        local spec="."
        [ -n "$extras" ] && spec=".[$extras]"
        "$VENV/bin/python" -m pip install -q -e "$spec"
        echo "$want" > "$stamp"
    fi
}

prepare_models() {
    log "verifying models"
    "$VENV/bin/interp" prepare
}

# Debian packages the features use: translation (Apertium) and fallback speech (espeak-ng).
RUNTIME_DEBS=(apertium apertium-eng-spa apertium-fr-es apertium-es-pt apertium-spa-ita apertium-eng-cat apertium-en-gl espeak-ng)
