#!/usr/bin/env bash
# Compares two ngxtls binaries' lint and parse outputs byte for byte: the report file, stdout,
# stderr and the exit code, on every corpus file and on the config files named. A speed change
# must leave every one of them as it was.
#
# Usage: tests/bench/compare_outputs.sh OLD_NGXTLS NEW_NGXTLS [CONFIG...]
#   CORPUS_DIR (default /work/shared/corpus): every file under its files/ is linted (json, text,
#   sarif) and parsed (json, crossplane, with and without --single-file);
#   each CONFIG is linted with --format json (and --fleet) and parsed with --format json.
# Prints one line per difference and exits 1 if there was any.
set -u
old=$1
new=$2
shift 2
corpus=${CORPUS_DIR:-/work/shared/corpus}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
differences=0

# run_both NAME ARGS...: runs both binaries with ARGS (OUT in ARGS becomes each one's report file).
run_both() {
  local name=$1
  shift
  local side bin
  for side in old new; do
    [[ $side == old ]] && bin=$old || bin=$new
    local args=()
    for a in "$@"; do args+=("${a//OUT/$work/$side.report}"); done
    rm -f "$work/$side.report"
    (cd "$work" && "$bin" "${args[@]}" >"$work/$side.stdout" 2>"$work/$side.stderr")
    echo $? >"$work/$side.rc"
    [[ -e $work/$side.report ]] || : >"$work/$side.report"
  done
  local part
  for part in report stdout stderr rc; do
    if ! cmp -s "$work/old.$part" "$work/new.$part"; then
      echo "DIFFERS ($part): $name"
      differences=$((differences + 1))
    fi
  done
}

count=0
while IFS= read -r -d '' f; do
  for format in json text sarif; do
    run_both "lint $format $f" lint --format "$format" --nginx-version 1.22.1 -o OUT "$f"
  done
  for format in json crossplane; do
    run_both "parse $format $f" parse --format "$format" "$f"
    run_both "parse $format --single-file $f" parse --single-file --format "$format" "$f"
  done
  count=$((count + 1))
done < <(find "$corpus/files" -type f -print0 | sort -z)
echo "corpus: $count files compared"

for f in "$@"; do
  run_both "lint json $f" lint --format json --nginx-version 1.22.1 -o OUT "$f"
  run_both "lint json --fleet $f" lint --fleet --format json --nginx-version 1.22.1 -o OUT "$f"
  run_both "parse json $f" parse --format json "$f"
  echo "compared $f"
done

if ((differences > 0)); then
  echo "$differences differences"
  exit 1
fi
echo "no differences"
